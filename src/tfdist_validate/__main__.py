import sys

from tfdist_validate.cli import main

sys.exit(main())
