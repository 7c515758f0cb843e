"""Writes remat-load.tsv in a real-config folder: remat's first load of each config there (remat
estimate --framework hf on the H200 spec; exit 0 fits, 1 does not fit, 2 refused with the one-line
error).

    python3 examples/hf/realcfg_tools/load_tsv.py examples/hf/unseen16/realcfg
"""
import glob, json, os, re, subprocess, sys, tempfile
root = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '../../..'))
here = os.path.abspath(sys.argv[1])
remat = f'{root}/build/src/remat'
def model_type(d):
    t = str(d.get('model_type', '?'))
    for k in ('text_config', 'llm_config', 'language_config', 'thinker_config', 'decoder_config'):
        if isinstance(d.get(k), dict) and d[k].get('model_type'):
            return t + '/' + str(d[k]['model_type'])
    return t
rows = []
os.chdir(here)
for f in sorted(glob.glob('*.json')):
    d = json.load(open(f))
    with tempfile.TemporaryDirectory() as tmp:
        out = f'{tmp}/r.json'
        r = subprocess.run([remat, 'estimate', '--model', f, '--hardware', f'{root}/hardware/h200.yaml',
                            '--framework', 'hf', '--json', out], capture_output=True, text=True)
        if r.returncode == 2:
            line = [l for l in r.stderr.splitlines() if not l.startswith('note:')][0]
            res = re.sub(r'^error: ', '', line).replace(f + ': ', '', 1)
        else:
            j = json.load(open(out))
            res = str(int(j['model']['params'])) + ('' if j['fits'] else ' (fits=false)')
    rows.append((f, model_type(d), str(r.returncode), res))
with open('remat-load.tsv', 'w') as o:
    o.write('file\tmodel_type\texit\tparams_or_error\n')
    for row in rows:
        o.write('\t'.join(row) + '\n')
