"""One gloo rank of test_fidelity's probe test: probes, then saves its scores
and what it read. Arguments: dataset, output directory, rank, world size, port."""
import sys

import torch
import torch.distributed as dist

import pcr
import pcr.torch

path, out, rank, world, port = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
records = []


class Counting(pcr._pcr.ImageDataset):
    def record_samples(self, record, fidelity="full", fields=()):
        records.append(record)
        return super().record_samples(record, fidelity, fields)


pcr._pcr.ImageDataset = Counting
model = torch.load(f"{out}/model.pt")
taken = []
share = pcr.torch._probe_share


def probe_share(*args):
    taken.extend(share(*args))
    return taken


pcr.torch._probe_share = probe_share
scores = pcr.torch.gradient_similarity(model, torch.nn.functional.cross_entropy, path, images=16, batch_size=4,
                                       size=32, threads=1,
                                       batch_transform=lambda b: (b[0].float() / 255, b[1]))
torch.save({"scores": scores, "records": records, "images": len(taken)}, f"{out}/rank{rank}.pt")
dist.barrier()
dist.destroy_process_group()
