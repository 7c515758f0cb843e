#!/bin/sh
# Not run yet: transformers Mamba-2 at seq 2048 and 4096 (reports/hybrid/README.md, Not done), and every
# saved storage of both transformers mixers at seq 1024 with the source line that saved it. Run from the
# repository root on the GPU machine with OUT set (the run tool does); writes $OUT/hybrid-h100-tf-mamba.jsonl,
# $OUT/saved-{mamba2,gated_deltanet}.json and copies of the transformers modeling files it ran.
cd examples/hybrid && PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python - <<'P'
import json,os,shutil,traceback as tb,torch,transformers as T
import hybrid_ref as H
from transformers.models.nemotron_h import modeling_nemotron_h as a
from transformers.models.qwen3_next import modeling_qwen3_next as b
from transformers.models.zamba2 import modeling_zamba2 as z
O=os.environ['OUT']
for m in (a,b,z):shutil.copy(m.__file__,O)
out=open(O+'/hybrid-h100-tf-mamba.jsonl','w')
dev=torch.cuda.get_device_name()
for nm,mk,c,seqs in (('mamba2',H.tf_mamba,H.MAMBA,[2048,4096]),('gated_deltanet',H.tf_gdn,H.GDN,[])):
 with torch.device('cuda'):
  torch.manual_seed(0);L,info=mk();L=L.to(H.BF16)
  ps={p.untyped_storage().data_ptr() for p in L.parameters()}
  x=torch.randn(1,1024,c['h'],dtype=H.BF16,requires_grad=True)
  R={}
  def pack(t):
   s=t.untyped_storage();p=s.data_ptr()
   if p not in R and p not in ps:
    f=[f for f in tb.extract_stack() if 'modeling_' in f.filename or 'hybrid_ref' in f.filename][-1:]
    f=f[0] if f else None
    R[p]=[s.nbytes(),list(t.shape),str(t.dtype),f and os.path.basename(f.filename),f and f.lineno,f and f.line]
   return t
  with torch.autograd.graph.saved_tensors_hooks(pack,lambda t:t):y=L(x)
  json.dump(sorted(R.values(),key=lambda r:-r[0]),open(O+'/saved-'+nm+'.json','w'))
  print(nm,len(R),sum(r[0] for r in R.values()))
  del y,x
  n=sum(p.numel() for p in L.parameters())
  for q in seqs:
   for s in ['none','full','full_reentrant']:
    try:
     r=H.measure(L,s,q,c['h'])
     r=dict(device=dev,torch=torch.__version__,transformers=T.__version__,block=nm,impl='transformers',seq=q,batch=1,strategy=s,dims=c,params=n,**info,**r)
    except Exception as e:
     r=dict(device=dev,block=nm,impl='transformers',seq=q,strategy=s,error=repr(e)[:400])
    torch.cuda.empty_cache();out.write(json.dumps(r)+'\n');out.flush()
    print(q,s,r.get('kept_bytes'),r.get('peak_above_inputs'),r.get('error'),flush=True)
  del L;torch.cuda.empty_cache()
P
