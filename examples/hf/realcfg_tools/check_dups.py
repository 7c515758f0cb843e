"""Checks that no config in a real-config folder equals (after JSON parsing) one in
tests/data/hf_configs/, any other examples/hf/*/realcfg/ folder, or (stricter) any other JSON config
in the repository.

    python3 examples/hf/realcfg_tools/check_dups.py examples/hf/unseen16/realcfg
"""
import glob, json, os, sys
root = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '../../..'))
here = os.path.abspath(sys.argv[1])
def canon(p):
    return json.dumps(json.load(open(p)), sort_keys=True)
def index(paths):
    out = {}
    for p in paths:
        try:
            d = json.load(open(p))
        except Exception:
            continue
        if isinstance(d, dict) and 'model_type' in d:
            out[json.dumps(d, sort_keys=True)] = os.path.relpath(p, root)
    return out
named = index(glob.glob(f'{root}/tests/data/hf_configs/**/*.json', recursive=True) +
              [p for p in glob.glob(f'{root}/examples/hf/*/realcfg/*.json') if not p.startswith(here)])
wide = index([p for p in glob.glob(f'{root}/**/*.json', recursive=True)
              if not p.startswith(here) and '/build/' not in p])
seen, bad = {}, 0
for p in sorted(glob.glob(f'{here}/*.json')):
    k = canon(p); f = os.path.basename(p)
    for what, idx in (('corpus/realcfg', named), ('repository', wide)):
        if k in idx:
            print(f'DUP {f} == {idx[k]} ({what})'); bad += 1
    if k in seen:
        print(f'DUP {f} == {seen[k]} (this set)'); bad += 1
    seen[k] = f
print(f'{len(seen)} files, {bad} duplicates')
sys.exit(1 if bad else 0)
