"""Leaves epochs of pcr.torch loaders early, over and over, with fork and
spawn DataLoader workers, in one process or on 2 DDP ranks (gloo on
127.0.0.1): by break, by an exception in the consumer and by del, and at
last exits with an iterator mid-epoch. Run by test_torch.py, which checks
that no process aborts.
usage: early_exit_ranks.py DATASET RANKS PORT FORK_TIMES SPAWN_TIMES"""
import os
import sys

import torch.distributed as dist
import torch.multiprocessing as mp

import pcr.torch


def rank_main(rank, dataset, ranks, port, times):
    if ranks > 1:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=ranks)
    kept = []
    for context, n in times:
        for trial in range(n):
            loader = pcr.torch.ImageLoader(dataset, batch_size=4, size=32, resize=32, threads=2, seed=trial)
            batches = pcr.torch.DataLoader(loader, num_workers=2, multiprocessing_context=context)
            try:
                for k, (images, labels) in enumerate(batches):
                    assert images.shape[1:] == (3, 32, 32)
                    if k == 1 + trial % 3:
                        if trial % 3 == 1:
                            raise KeyError("the consumer fails")
                        break
            except KeyError:
                pass
            if trial % 3 == 2:
                del batches
        if n:
            kept.append(iter(pcr.torch.DataLoader(loader, num_workers=2, multiprocessing_context=context)))
            next(kept[-1])
    if ranks > 1:
        dist.barrier()
    sys.stdout.flush()
    os.write(1, f"rank {rank} done\n".encode())  # one write: the ranks share the pipe


if __name__ == "__main__":
    dataset, ranks, port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    times = [("fork", int(sys.argv[4])), ("spawn", int(sys.argv[5]))]
    if ranks == 1:
        rank_main(0, dataset, ranks, port, times)
    else:
        mp.spawn(rank_main, args=(dataset, ranks, port, times), nprocs=ranks)
