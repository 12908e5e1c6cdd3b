"""A DDP job fed by a DataLoader whose compiled step re-weights partial batches.

Every rank's shard divides into full batches, so a normal run never reaches the partial-batch
branch. ``rankdoctor check --uneven`` cuts some batches on ranks >= 1: their compiled step
recompiles for the new shape and all-reduces the sample count, which rank 0 never does.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

BATCH = 8


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(128, 16), torch.randn(128, 4))
    loader = DataLoader(data, batch_size=BATCH, sampler=DistributedSampler(data, shuffle=False))
    model = DDP(torch.nn.Linear(16, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    @torch.compile(backend="eager")
    def loss_of(x, y):
        loss = F.mse_loss(model(x), y, reduction="sum")
        n = torch.tensor([float(x.shape[0])])
        if x.shape[0] < BATCH:  # partial batch: divide by the global number of samples
            dist.all_reduce(n)
        return loss / n

    for epoch in range(3):
        for x, y in loader:
            loss = loss_of(x, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"rank {dist.get_rank()} epoch {epoch} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
