"""One reader per annotation source, each meeting ``renderer.annotations.protocol.Reader``; the registry
(``renderer.annotations.registry.READERS``) lists them in the order they are tried."""

__all__: list[str] = []
