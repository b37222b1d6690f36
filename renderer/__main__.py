from renderer.commands.cli import console

console()
