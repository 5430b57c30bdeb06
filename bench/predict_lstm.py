#!/usr/bin/python3
"""The LSTM the user's documents name, on the same landmark features as titan's models, against
titan's default (cox_history) under the same protocol: one fit at --split, scored at every origin
after it (bench/RESULTS.md, "Predict"). It stays here unless it wins.

    titan predict features gc_full.csv --split 2017-01-01 -o feat/
    titan predict backtest gc_full.csv --split 2017-01-01 --refit 3650d --model cox_history --json bt.json
    /usr/bin/python3 bench/predict_lstm.py feat/ bt.json

Input per row: the component's last K landmark rows up to this one (zero-padded), features
standardised on the training rows; an LSTM (hidden 32) and a linear layer give the logit of a
failure within the horizon; weighted binary cross-entropy (the training rows' sampling weights).
Metrics as titan computes them: Harrell's concordance over pairs within each origin, lift at the
top 10% of each origin.
"""
import csv
import json
import sys
import time

import numpy as np
import torch

K = 4
torch.manual_seed(1)
np.random.seed(1)
torch.set_num_threads(2)


def load(path):
    with open(path) as f:
        r = csv.reader(f)
        head = next(r)
        comp, num = [], []
        for row in r:
            comp.append(row[0])
            num.append([float(x) for x in row[1:5]] + [float(x) for x in row[6:]])
    a = np.asarray(num, dtype=np.float64)
    return np.asarray(comp), a[:, 0], a[:, 1], a[:, 2], a[:, 3], a[:, 4:].astype(np.float32), head[6:]


def sequences(comp, origin, x):
    """For each row, the component's last K rows with origin <= its own (oldest first)."""
    order = np.lexsort((origin, comp))
    seq = np.zeros((len(comp), K, x.shape[1]), dtype=np.float32)
    prev_comp, hist = None, []
    for i in order:
        if comp[i] != prev_comp:
            prev_comp, hist = comp[i], []
        hist.append(i)
        take = hist[-K:]
        seq[i, K - len(take):] = x[take]
    return seq


class Net(torch.nn.Module):
    def __init__(self, p):
        super().__init__()
        self.lstm = torch.nn.LSTM(p, 32, batch_first=True)
        self.out = torch.nn.Linear(32, 1)

    def forward(self, s):
        h, _ = self.lstm(s)
        return self.out(h[:, -1]).squeeze(-1)


def metrics(origin, follow, event, p, horizon=30.0):
    num = den = hits = top_n = 0.0
    events_total = event.sum()
    for o in np.unique(origin):
        m = origin == o
        f, e, q = follow[m], event[m] > 0, p[m]
        for i in np.flatnonzero(e):
            later = (f > f[i]) | ((f == f[i]) & ~e)
            num += (q[later] < q[i]).sum() + 0.5 * (q[later] == q[i]).sum()
            den += later.sum()
        top = int(np.ceil(0.1 * len(q)))
        idx = np.argsort(-q, kind="stable")[:top]
        hits += e[idx].sum()
        top_n += top
    base = events_total / len(event)
    return num / den, (hits / top_n) / base


def main():
    feat, bt = sys.argv[1], sys.argv[2]
    t0 = time.time()
    tc, to, tf, te, tw, tx, names = load(feat + "/train.csv")
    vc, vo, vf, ve, vw, vx, _ = load(feat + "/test.csv")
    mean, sd = tx.mean(0), tx.std(0) + 1e-6
    allc = np.concatenate([tc, vc])
    allo = np.concatenate([to, vo])
    allx = (np.concatenate([tx, vx]) - mean) / sd
    seq = sequences(allc, allo, allx)
    s_train, s_test = torch.from_numpy(seq[:len(tc)]), torch.from_numpy(seq[len(tc):])
    y = torch.from_numpy(te.astype(np.float32))
    w = torch.from_numpy(tw.astype(np.float32))
    t_load = time.time() - t0
    net = Net(tx.shape[1])
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    t0 = time.time()
    for epoch in range(8):
        perm = torch.randperm(len(y))
        for b in range(0, len(y), 512):
            idx = perm[b:b + 512]
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                net(s_train[idx]), y[idx], weight=w[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        p = torch.cat([torch.sigmoid(net(s_test[b:b + 65536])) for b in range(0, len(s_test), 65536)]).numpy()
    t_fit = time.time() - t0
    c, lift = metrics(vo, vf, ve, p)
    cox = json.load(open(bt))["models"]["cox_history"]
    print(f"rows: train {len(tc)}, test {len(vc)}; load {t_load:.1f} s, LSTM fit+predict {t_fit:.1f} s")
    print(f"{'':14} {'c_index':>8} {'lift@10%':>9}")
    print(f"{'lstm':14} {c:8.3f} {lift:9.2f}")
    print(f"{'cox_history':14} {cox['c_index']:8.3f} {cox['lift_at']['0.1']:9.2f}")
    print("winner:", "lstm" if c > cox["c_index"] and lift > cox["lift_at"]["0.1"] else "cox_history")


main()
