"""Answer keys: parsing a large JSON key with the duplicate-name hooks against msgspec, a huge step, and an alias bomb refused.

    python bench/bench_key.py
"""
import json, time, msgspec, tempfile, os
from modelrecord.key import load_key, _json_key
cases = {f"MT-{i:05d}": {"steps": [{"action": "issue.delete", "args": [{"name": f"a{j}", "fact": "project_path", "required": True} for j in range(5)]} for _ in range(5)]} for i in range(4000)}
data = json.dumps({"cases": cases, "catalog": {"actions": {"issue.delete": {}}}}).encode()
t = time.perf_counter(); msgspec.json.decode(data); a = time.perf_counter() - t
t = time.perf_counter(); _json_key("k.json", data); b = time.perf_counter() - t
print(f"parse {len(data)/2**20:.1f} MB JSON key: msgspec {a:.2f} s, json with the key hooks {b:.2f} s")
step = {"action": "issue.delete", "args": [{"name": f"a{i}", "literal": i} for i in range(60_000)]}
t = time.perf_counter(); load_key({"cases": {"MT-013": {"steps": [step]}}}); print(f"load a 60,000-argument step: {time.perf_counter() - t:.2f} s")
d = tempfile.mkdtemp(); p = os.path.join(d, "k.yaml")
args = ", ".join(f"{{name: a{i}, literal: {i}}}" for i in range(3000))
open(p, "w").write(f"cases:\n  MT-013: {{steps: [&s {{action: issue.delete, args: [{args}]}}, {', '.join(['*s'] * 900)}]}}\n")
t = time.perf_counter()
try: load_key(p)
except Exception: print(f"3,000-argument step aliased 900 times ({os.path.getsize(p)/1024:.0f} KB): refused in {time.perf_counter() - t:.2f} s")
