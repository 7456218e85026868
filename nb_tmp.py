import sys
from benchmarks.noise_exact import measure
from mpcdp.config import MpcConfig
if __name__ == "__main__":
    m = int(sys.argv[1]); prov = sys.argv[2]; samples = int(sys.argv[3])
    r = measure(MpcConfig(parties=m, timeout_s=600, provider=prov), "dgauss", samples, 1.0)
    print(m, prov, {k: (round(v, 1) if isinstance(v, float) else v) for k, v in r.items()})
