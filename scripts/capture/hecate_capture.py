"""Record expert loads from a real PyTorch MoE training run as a hecate-sim trace (JSON v1).

Usage in a training script:

    from hecate_capture import ExpertLoadRecorder
    rec = ExpertLoadRecorder(num_experts=8, top_k=2, model_preset="my-moe")
    for layer, router in enumerate(my_router_modules):
        rec.attach(router, layer)            # forward hook: reads the router's top-k expert ids
    for step, batch in enumerate(loader):
        loss = train_step(batch)
        rec.step(step)                        # closes the record of this iteration
    rec.write("trace.json")                   # one process: sources = the shards given to record()

The hook expects the router module to return its top-k expert indices, either as the output itself
(a LongTensor [..., top_k]) or as the last element of a tuple; pass `extract=` to `attach` for other
router signatures (a function (module, inputs, output) -> LongTensor of expert ids, [tokens, top_k]).

Data parallelism: under torch.distributed every rank records its own tokens and writes
`PREFIX.rank{R}.json` with `write_rank(PREFIX)`; `python3 hecate_capture.py merge OUT PREFIX.rank*.json`
merges them into one trace whose sources are the ranks. Within a single process, `sources=N` splits
each router call's tokens into N contiguous shards (the micro-batch shards N data-parallel ranks
would route), which is how the bundled PyTorch traces were recorded.
"""
import json
import sys


class ExpertLoadRecorder:
    def __init__(self, num_experts, top_k, model_preset="", sources=1, provenance=None):
        self.num_experts = num_experts
        self.top_k = top_k
        self.model_preset = model_preset
        self.sources = sources
        self.provenance = provenance or {}
        self.records = []
        self._current = {}   # layer -> [source][expert] counts
        self._layers = set()
        self._tokens = None

    def attach(self, module, layer, extract=None):
        self._layers.add(layer)

        def hook(mod, inputs, output):
            ids = extract(mod, inputs, output) if extract else (output[-1] if isinstance(output, tuple) else output)
            self.record(layer, ids)

        return module.register_forward_hook(hook)

    def record(self, layer, ids):
        """ids: integer tensor [tokens, top_k] (or anything reshapeable to it) of chosen experts."""
        import torch
        ids = ids.detach().reshape(-1, self.top_k).to("cpu")
        tokens = ids.shape[0]
        if tokens % self.sources:
            raise ValueError(f"{tokens} tokens do not split into {self.sources} sources")
        per = tokens // self.sources
        rows = self._current.setdefault(layer, [[0] * self.num_experts for _ in range(self.sources)])
        for s in range(self.sources):
            counts = torch.bincount(ids[s * per:(s + 1) * per].reshape(-1), minlength=self.num_experts)
            for e, c in enumerate(counts.tolist()):
                rows[s][e] += int(c)
        # Tokens per source per iteration (summed over calls: gradient accumulation).
        self._calls = getattr(self, "_calls", {})
        self._calls[layer] = self._calls.get(layer, 0) + per

    def step(self, iteration):
        if not self._current:
            return
        layers = sorted(self._layers)
        tokens = self._calls[layers[0]]
        if self._tokens is None:
            self._tokens = tokens
        elif tokens != self._tokens:
            raise ValueError(f"iteration {iteration} routed {tokens} tokens per source, earlier ones {self._tokens}")
        self.records.append({"iter": int(iteration), "counts": [self._current[l] for l in layers]})
        self._current = {}
        self._calls = {}

    def trace(self):
        return {
            "format": "hecate-sim/expert-load-trace", "version": "1.0",
            "model": dict(({"preset": self.model_preset} if self.model_preset else {}),
                          moe_layers=len(self._layers), experts=self.num_experts, top_k=self.top_k),
            "workload": {"sources": self.sources, "tokens_per_source": self._tokens or 0},
            "axes": ["layer", "source", "expert"],
            "provenance": dict({"kind": "recorded", "recorder": "scripts/capture/hecate_capture.py"}, **self.provenance),
            "records": self.records,
        }

    def write(self, path):
        _write(path, self.trace())

    def write_rank(self, prefix):
        import torch.distributed as dist
        rank = dist.get_rank() if dist.is_available() and dist.is_initialized() else 0
        _write(f"{prefix}.rank{rank}.json", self.trace())


def _write(path, doc):
    import os
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        head = {k: v for k, v in doc.items() if k != "records"}
        f.write(json.dumps(head)[:-1] + ', "records": [\n')
        for i, r in enumerate(doc["records"]):
            f.write("  " + json.dumps(r, separators=(",", ":")) + (",\n" if i + 1 < len(doc["records"]) else "\n"))
        f.write("]}\n")
    os.replace(tmp, path)


def merge(out, rank_files):
    """Merges per-rank traces (sources=1 each, same iterations) into one trace with one source per rank."""
    docs = [json.load(open(p)) for p in sorted(rank_files, key=lambda p: int(p.rsplit("rank", 1)[1].split(".")[0]))]
    base = docs[0]
    for d in docs[1:]:
        if [r["iter"] for r in d["records"]] != [r["iter"] for r in base["records"]]:
            raise SystemExit("merge: ranks recorded different iterations")
    merged = dict(base)
    merged["workload"] = {"sources": sum(d["workload"]["sources"] for d in docs),
                          "tokens_per_source": base["workload"]["tokens_per_source"]}
    merged["records"] = []
    for i, r in enumerate(base["records"]):
        layers = []
        for l in range(len(r["counts"])):
            layers.append([row for d in docs for row in d["records"][i]["counts"][l]])
        merged["records"].append({"iter": r["iter"], "counts": layers})
    _write(out, merged)


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "merge":
        merge(sys.argv[2], sys.argv[3:])
    else:
        print("usage: python3 hecate_capture.py merge OUT.json PREFIX.rank0.json PREFIX.rank1.json ...\n"
              "   or: PYTHONPATH=scripts/capture python3 -m hecate_capture merge OUT.json PREFIX.rank*.json",
              file=sys.stderr)
        sys.exit(2)
