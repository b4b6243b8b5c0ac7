"""Properties of scoring: a verdict depends on its own attempt's lines only, and rows add up.

- the order of lines in a shard does not change a verdict (lines that tie by the contract's own
  ordering, a turn's tries at one index and calls at one index, keep their relative order);
- unrelated attempts beside an attempt do not change its verdict;
- scoring two sets of attempts apart and adding their rows (numerators, denominators, tallies)
  gives the rows of scoring their union.
"""
import random

import pandas as pd
from hypothesis import HealthCheck, given, settings, strategies as st

from modelrecord.record import Attempt, Call, Turn, Verify, encode
from modelrecord.sample import answer_key, generate
from modelrecord.score import PUBLISHED, Ratio, overhead_text, score

KEY = answer_key(5, 60)
SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def write(directory, name, lines):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"modeleval-{name}.jsonl").write_bytes(b"".join(encode(line) + b"\n" for line in lines))
    return directory


def verdicts(tree) -> dict:
    "attempt id -> everything its verdict says (attempt fields, steps and arguments), comparable."
    scores = score(tree, KEY, progress=False)
    steps = {k: g.drop(columns=["attempt_key"]).to_dict("records") for k, g in scores.steps.groupby("attempt_key")}
    arguments = {k: g.drop(columns=["attempt_key"]).fillna("<none>").to_dict("records") for k, g in scores.arguments.groupby("attempt_key")}
    fields = ["outcome", "why", "reason", "discovery", "invalid_params", "unaided", "verified", "clean", "surface", "mode", "tier"]
    return {row.attempt: ({f: row[f] for f in fields}, steps.get(at, []), arguments.get(at, [])) for at, row in scores.attempts.iterrows()}


def tie(line):
    "The group of lines whose relative order the contract gives a meaning to, or None."
    if isinstance(line, Turn): return (line.attempt, "turn", line.index)
    if isinstance(line, Call): return (line.attempt, "call", line.index)
    return None


def shuffled(lines, rng: random.Random) -> list:
    "`lines` in a random order, lines of one tie group keeping their relative order."
    order = list(range(len(lines)))
    rng.shuffle(order)
    out = [lines[i] for i in order]
    groups = {}
    for position, line in enumerate(out): groups.setdefault(tie(line), []).append(position)
    for group, positions in groups.items():
        if group is None: continue
        members = sorted((lines.index(out[p]) for p in positions))
        for p, original in zip(positions, members): out[p] = lines[original]
    return out


@SETTINGS
@given(target=st.sampled_from(["ce", "ee"]), shard=st.integers(0, 1), attempts=st.integers(4, 24), order=st.randoms(use_true_random=False))
def test_line_order_does_not_change_a_verdict(tmp_path_factory, target, shard, attempts, order):
    lines = generate(seed=5, target=target, shard=shard, attempts=attempts, huge=0.1)
    base = tmp_path_factory.mktemp("order")
    assert verdicts(write(base / "a", "a", lines)) == verdicts(write(base / "b", "b", shuffled(lines, order)))


@SETTINGS
@given(shard=st.integers(0, 1), first=st.integers(1, 12), more=st.integers(1, 30), order=st.randoms(use_true_random=False))
def test_unrelated_attempts_do_not_change_a_verdict(tmp_path_factory, shard, first, more, order):
    alone = generate(seed=5, shard=shard, attempts=first, target="ee")
    beside = generate(seed=5, shard=shard, attempts=first + more, target="ee")  # the same attempts, then others
    base = tmp_path_factory.mktemp("beside")
    few, many = verdicts(write(base / "a", "a", alone)), verdicts(write(base / "b", "b", shuffled(beside, order)))
    assert len(many) == first + more
    assert few == {attempt: many[attempt] for attempt in few}


def attempt_groups(lines) -> tuple:
    "The run and session lines of a shard, and the lines of each attempt."
    head, groups = [], {}
    for line in lines:
        if isinstance(line, Attempt): groups[line.id] = [line]
        elif isinstance(line, (Turn, Call, Verify)): groups[line.attempt].append(line)
        else: head.append(line)
    return head, list(groups.values())


NUMBERS = ["attempts", *(f"{c}_{part}" for c in PUBLISHED for part in ("numerator", "denominator")), "find", "invalid_params", "turns",
           "completed", "failed", "over_budget", "malformed", "gitlab_refused", "unobserved", "skipped", "provider_error", "harness_error",
           "declines_by_refusal", "declines_by_text", "confirmations_unaided", "confirmations_server_aided", "confirmations_never"]


@SETTINGS
@given(shard=st.integers(0, 1), attempts=st.integers(6, 40), picks=st.lists(st.booleans(), min_size=40, max_size=40),
       by=st.sampled_from([("model", "surface"), ("model",), ("surface", "mode"), "row"]))
def test_adding_two_rows_is_scoring_their_union(tmp_path_factory, shard, attempts, picks, by):
    head, groups = attempt_groups(generate(seed=5, shard=shard, attempts=attempts, target="ee"))
    left = [line for group, pick in zip(groups, picks) if pick for line in group]
    right = [line for group, pick in zip(groups, picks) if not pick for line in group]
    base = tmp_path_factory.mktemp("union")
    tables = []
    for name, part in (("left", left), ("right", right)):
        if part: tables.append(score(write(base / name, name, head + part), KEY, progress=False).table(by)[NUMBERS])
    write(base / "both" / "l", "left", head + left)
    write(base / "both" / "r", "right", head + right)
    union = score(base / "both", KEY, progress=False).table(by)
    added = tables[0] if len(tables) == 1 else tables[0].add(tables[1], fill_value=0).astype("int64")
    pd.testing.assert_frame_equal(union[NUMBERS], added.reindex(union.index), check_names=False)
    for name in PUBLISHED:
        texts = [overhead_text(f, i, d) if name == "overhead" else str(Ratio(n, d)) for n, d, f, i in
                 zip(added[f"{name}_numerator"], added[f"{name}_denominator"], added["find"], added["invalid_params"])]
        assert union[name].tolist() == texts
