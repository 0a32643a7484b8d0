"""Record expert loads from a real PyTorch MoE training run as a hecate-sim trace (JSON v1.0, or v1.1 with
micro-batches).

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

Gradient accumulation: with `micro_batches=True` every forward call of a router within one optimizer step (between
two `step()` calls) is recorded as its own micro-batch (trace axis micro_batch, format v1.1), so a simulator sees
each micro-batch's loads rather than the step's sum. Every layer must be called the same number of times per step,
and every step as often as the first (else ValueError naming the step and both numbers); each call must route the
same number of tokens. With activation recomputation the router runs again in backward: detach the hooks there (or
record only under torch.is_grad_enabled()) so a recomputed forward is not counted as a micro-batch. Without it
(the default) the calls of a step are summed, as in traces v1.0.

Data parallelism: under torch.distributed every rank records its own tokens and writes
`PREFIX.rank{R}.json` with `write_rank(PREFIX)`; `python3 hecate_capture.py merge OUT PREFIX.rank*.json`
merges them into one trace whose sources are the ranks. Within a single process, `sources=N` splits
each router call's tokens into N contiguous shards (the micro-batch shards N data-parallel ranks
would route), which is how the bundled PyTorch traces were recorded.
"""
import json
import sys


class ExpertLoadRecorder:
    def __init__(self, num_experts, top_k, model_preset="", sources=1, provenance=None, micro_batches=False):
        self.num_experts = num_experts
        self.top_k = top_k
        self.model_preset = model_preset
        self.sources = sources
        self.provenance = provenance or {}
        self.micro_batches = micro_batches
        self.records = []
        self._current = {}   # layer -> list, one per forward call, of [source][expert] counts
        self._calls = {}     # layer -> tokens per source of each call
        self._layers = set()
        self._tokens = None  # tokens per source of one step
        self._micro = None   # forward calls per layer and step (micro_batches=True)

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
        rows = [torch.bincount(ids[s * per:(s + 1) * per].reshape(-1), minlength=self.num_experts).tolist()
                for s in range(self.sources)]
        self.record_counts(layer, rows)

    def record_counts(self, layer, rows):
        """One router call of `layer`: rows[source][expert] = assignments (each source's sum = its tokens x top_k)."""
        if len(rows) != self.sources or any(len(r) != self.num_experts for r in rows):
            raise ValueError(f"layer {layer}: expected {self.sources} rows of {self.num_experts} counts")
        sums = {sum(r) for r in rows}
        if len(sums) != 1 or next(iter(sums)) % self.top_k:
            raise ValueError(f"layer {layer}: every source must route the same tokens x top_k {self.top_k}, got sums {sorted(sums)}")
        self._layers.add(layer)
        self._current.setdefault(layer, []).append([[int(c) for c in r] for r in rows])
        self._calls.setdefault(layer, []).append(next(iter(sums)) // self.top_k)

    def step(self, iteration):
        if not self._current:
            return
        layers = sorted(self._layers)
        for l in layers:
            if l not in self._current:
                raise ValueError(f"iteration {iteration}: layer {l} was not called")
        calls = {l: len(self._current[l]) for l in layers}
        tokens = sum(self._calls[layers[0]])  # tokens per source of the step (all calls)
        if self._tokens is None:
            self._tokens = tokens
        elif tokens != self._tokens:
            raise ValueError(f"iteration {iteration} routed {tokens} tokens per source, earlier ones {self._tokens}")
        if self.micro_batches:
            m = calls[layers[0]]
            if any(c != m for c in calls.values()):
                raise ValueError(f"iteration {iteration}: layers were called different numbers of times {calls}: "
                                 "every micro-batch must pass every MoE layer once")
            if self._micro is None:
                self._micro = m
            elif m != self._micro:
                raise ValueError(f"iteration {iteration} has {m} micro-batches (forward calls), earlier ones {self._micro}")
            if len({t for l in layers for t in self._calls[l]}) != 1:
                raise ValueError(f"iteration {iteration}: micro-batches routed different numbers of tokens "
                                 f"{ {l: self._calls[l] for l in layers} }")
            counts = [[self._current[l][mb] for l in layers] for mb in range(m)]
        else:  # the calls of a step summed
            counts = [[[sum(call[s][e] for call in self._current[l]) for e in range(self.num_experts)]
                       for s in range(self.sources)] for l in layers]
        self.records.append({"iter": int(iteration), "counts": counts})
        self._current = {}
        self._calls = {}

    def trace(self):
        micro = self.micro_batches and self._micro is not None
        workload = {"sources": self.sources, "tokens_per_source": self._tokens or 0}
        if micro:
            workload["micro_batches"] = self._micro
        return {
            "format": "hecate-sim/expert-load-trace", "version": "1.1" if micro else "1.0",
            "model": dict(({"preset": self.model_preset} if self.model_preset else {}),
                          moe_layers=len(self._layers), experts=self.num_experts, top_k=self.top_k),
            "workload": workload,
            "axes": (["micro_batch"] if micro else []) + ["layer", "source", "expert"],
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
    """Merges per-rank traces (same iterations, same micro-batches) into one trace with one source per rank."""
    docs = [json.load(open(p)) for p in sorted(rank_files, key=lambda p: int(p.rsplit("rank", 1)[1].split(".")[0]))]
    base = docs[0]
    for d in docs[1:]:
        if [r["iter"] for r in d["records"]] != [r["iter"] for r in base["records"]]:
            raise SystemExit("merge: ranks recorded different iterations")
        if d["workload"].get("micro_batches") != base["workload"].get("micro_batches"):
            raise SystemExit(f"merge: ranks recorded {d['workload'].get('micro_batches')} and "
                             f"{base['workload'].get('micro_batches')} micro-batches per iteration")
    merged = dict(base)
    merged["workload"] = dict(base["workload"], sources=sum(d["workload"]["sources"] for d in docs))

    def rows(i, path):  # the source rows of one layer (of one micro-batch) in every rank, in rank order
        out = []
        for d in docs:
            x = d["records"][i]["counts"]
            for k in path:
                x = x[k]
            out += x
        return out

    micro = "micro_batch" in base["axes"]
    merged["records"] = []
    for i, r in enumerate(base["records"]):
        if micro:
            counts = [[rows(i, (mb, l)) for l in range(len(r["counts"][mb]))] for mb in range(len(r["counts"]))]
        else:
            counts = [rows(i, (l,)) for l in range(len(r["counts"]))]
        merged["records"].append({"iter": r["iter"], "counts": counts})
    _write(out, merged)


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "merge":
        merge(sys.argv[2], sys.argv[3:])
    else:
        print("usage: python3 hecate_capture.py merge OUT.json PREFIX.rank0.json PREFIX.rank1.json ...\n"
              "   or: PYTHONPATH=scripts/capture python3 -m hecate_capture merge OUT.json PREFIX.rank*.json",
              file=sys.stderr)
        sys.exit(2)
