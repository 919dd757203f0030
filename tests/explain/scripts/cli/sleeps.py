"""Says it is ready, then waits to be interrupted."""

import sys
import time

print("ready", flush=True)
time.sleep(60)
sys.exit(5)
