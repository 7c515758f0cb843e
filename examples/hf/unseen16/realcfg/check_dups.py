"""Checks that no config here equals (after JSON parsing) one in tests/data/hf_configs/,
any examples/hf/*/realcfg/ folder, or (stricter) any other JSON config in the repository."""
import glob, json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
root = os.path.abspath(os.path.join(here, '../../../..'))
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
