import sys

from renderer.commands.cli import main

sys.exit(main())
