"""annograph inside other tools: Jupyter (``renderer.show``) and Sphinx (``renderer.integrations.sphinx``), which
read a model, its annotations and options the way ``annograph render`` does."""
