"""Print the text of a PDF (a fixture of the conformance suite's skills scenarios)."""

import sys

print(f"would extract the text of {sys.argv[1:]}")
