import sys
from pathlib import Path

# Tests import the library from the checkout, and the blog reference beside them.
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
