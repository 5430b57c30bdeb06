"""A real PyTorch training loop reports its steps through titan.client to a real receiver."""
from event_dump import EventDump, run_python

TRAIN = """
import torch, titan.client as tc
tc.init(job="tiny-mlp")
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(64, 16), torch.randn(64, 1)
losses = []
for step in range(30):
    with tc.step(step):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
assert losses[-1] < losses[0], losses
assert tc.dropped() == 0
"""


def test_torch_training_steps_arrive_in_order():
    with EventDump() as dump:
        run_python(TRAIN, dump.socket, {"RANK": "2"})
    steps = [e for e in dump.events if e["kind"] in ("step_begin", "step_end")]
    expected = [(kind, s) for s in range(30) for kind in ("step_begin", "step_end")]
    assert [(e["kind"], e["step"]) for e in steps] == expected
    assert all(e["rank"] == 2 for e in dump.events)
    assert dump.events[0]["kind"] == "hello" and dump.events[0]["name"] == "tiny-mlp"
    assert dump.events[-1]["kind"] == "goodbye"
    times = [e["time_ns"] for e in steps]
    assert times == sorted(times)
    assert dump.stats["rejected"] == {k: 0 for k in dump.stats["rejected"]}
