# Reads an OpenEvolve config.yaml with PyYAML (what OpenEvolve itself uses)
# and prints it as one JSON document, for the task loader to check with zod.
import json
import sys

try:
    import yaml
except ImportError:
    sys.stderr.write("python3 cannot import yaml: install PyYAML (Debian/Ubuntu: sudo apt install python3-yaml)\n")
    sys.exit(3)

with open(sys.argv[1], encoding="utf-8") as f:
    data = yaml.safe_load(f)
json.dump(data, sys.stdout, default=str)
