import sys

from operator_runtime.cli import main

sys.exit(main())
