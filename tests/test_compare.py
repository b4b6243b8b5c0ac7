"""Comparisons: every statistic against the library or a published value, and the properties a comparison must have."""
import json
import subprocess
import sys
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
import scipy.stats
import statsmodels.api as sm
from hypothesis import given, settings, strategies as st
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from modelrecord.cli import main
from modelrecord.compare import (
    MCNEMAR, NO_CHANGE, REGRESSION, SIGN_FLIP, SUCCESS_VERDICTS, attempt_successes, compare_models, compare_runs, consistency,
    cost_success, paired_test, pass_at_k, pass_at_k_estimate, pass_hat_k, pass_hat_k_estimate, rates, repeats,
    run_comparison_records, runs_of, verdict_success)
from modelrecord.sample import EXAMPLE_RUNS, example_runs, write_tree
from modelrecord.score import PROPORTIONS, published_table, score, table_text
from modelrecord.summary import Z95, clustered_proportions, clustered_se, summary, summary_records, wilson
from modelrecord.tables import load

SONNET, GPT, GEMINI = "anthropic:claude-sonnet-4;effort=high", "openai:gpt-5", "google:gemini-2.5-flash;temperature=0"


@pytest.fixture(scope="module")
def runs():
    return tuple(load(path) for path in example_runs())


# Intervals

def test_z_is_scipys_quantile():
    assert Z95 == scipy.stats.norm.ppf(0.975) == 1.959963984540054


def test_wilson_published_values():
    assert np.round(wilson(8, 10), 4).tolist() == [0.4902, 0.9433]  # Wilson (1927) / Newcombe (1998) table
    low, high = wilson(0, 5)
    assert low == 0.0 and round(high, 4) == 0.4345


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 2000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_is_statsmodels_and_holds_the_rate(case):
    x, n = case
    low, high = wilson(x, n)
    assert np.allclose((low, high), proportion_confint(x, n, alpha=0.05, method="wilson"), rtol=0, atol=1e-12)
    assert 0 <= low <= x / n <= high <= 1


@settings(max_examples=50, deadline=None)
@given(st.floats(0.0, 1.0), st.integers(5, 200))
def test_wilson_narrows_as_attempts_grow(share, n):
    narrow = wilson(round(share * 4 * n), 4 * n)
    wide = wilson(round(share * n), n)
    assert narrow[1] - narrow[0] < wide[1] - wide[0]


def test_wilson_of_nothing_is_unknown():
    assert all(np.isnan(wilson(0, 0)))
    low, high = wilson([3, 0], [4, 0])
    assert not np.isnan(low[0]) and np.isnan(high[1])


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 30), st.integers(1, 5), st.integers(0, 2**31))
def test_clustered_se_is_statsmodels(clusters, size, seed):
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(clusters), size)
    values = (rng.random(len(groups)) < rng.random()).astype(float)
    fit = sm.OLS(values, np.ones(len(values))).fit(cov_type="cluster", cov_kwds={"groups": groups})
    assert np.isclose(clustered_se(values, groups), fit.bse[0], rtol=1e-9, atol=1e-15)


# pass@k and pass^k

@pytest.mark.parametrize("n", range(1, 8))
def test_pass_k_against_every_subset(n):
    for c in range(n + 1):
        tries = [True] * c + [False] * (n - c)
        for k in range(1, n + 1):
            subsets = list(combinations(tries, k))
            assert np.isclose(pass_at_k_estimate(n, c, k), np.mean([any(s) for s in subsets]))
            assert np.isclose(pass_hat_k_estimate(n, c, k), np.mean([all(s) for s in subsets]))


def test_pass_k_per_model(runs):
    before, _ = runs
    items = repeats(before)
    one, three, hat = pass_at_k(before, 1), pass_at_k(before, 3), pass_hat_k(before, 3)
    rate = (items.c / items.n).groupby(level="model").mean()
    assert np.allclose(one.value, rate.loc[one.index])  # pass@1 is the mean per-item rate
    kept = items[items.n >= 3].groupby(level="model").size()
    assert (three.cases == kept.loc[three.index]).all()
    assert ((three.cases + three.left_out) == items.groupby(level="model").size().loc[three.index]).all()
    assert (hat.value <= one.value + 1e-12).all() and (three.value >= one.value - 1e-12).all()
    assert ((three.low <= three.value) & (three.value <= three.high)).all()
    pd.testing.assert_frame_equal(pass_at_k(before, 3, seed=4), pass_at_k(before, 3, seed=4))
    assert not pass_at_k(before, 3, seed=4)[["low", "high"]].equals(pass_at_k(before, 3, seed=5)[["low", "high"]])


def test_consistency_lists_only_mixed_items(runs):
    before, _ = runs
    mixed = consistency(before)
    assert len(mixed) and ((mixed.c > 0) & (mixed.c < mixed.n)).all()
    items = repeats(before)
    assert len(mixed) == int(((items.c > 0) & (items.c < items.n)).sum())


# Paired tests

def test_mcnemar_on_a_known_table():
    # Agresti (2002), table 10.1: approval of the president's performance in two surveys
    items = pd.DataFrame({"case": [f"c{i}" for i in range(1600)], "n_a": 1, "n_b": 1,
                          "c_a": [1] * 794 + [1] * 150 + [0] * 86 + [0] * 570,
                          "c_b": [1] * 794 + [0] * 150 + [1] * 86 + [0] * 570})
    result = paired_test(items)
    assert result["test"] == MCNEMAR
    assert result["counts"] == {"both": 794, "only_a": 150, "only_b": 86, "neither": 570}
    assert np.isclose(result["p_value"], mcnemar([[794, 150], [86, 570]], exact=True).pvalue)
    assert np.isclose(result["p_value"], scipy.stats.binomtest(86, 236).pvalue)
    assert np.isclose(result["difference"], (150 - 86) / 1600)


item_tables = st.integers(2, 25).flatmap(lambda m: st.tuples(
    st.lists(st.integers(1, 4), min_size=m, max_size=m), st.lists(st.integers(1, 4), min_size=m, max_size=m),
    st.lists(st.floats(0, 1), min_size=m, max_size=m), st.lists(st.floats(0, 1), min_size=m, max_size=m)))


def _items(drawn) -> pd.DataFrame:
    n_a, n_b, share_a, share_b = drawn
    return pd.DataFrame({"case": [f"MT-{i:03d}" for i in range(len(n_a))], "n_a": n_a, "n_b": n_b,
                         "c_a": [round(s * n) for s, n in zip(share_a, n_a)], "c_b": [round(s * n) for s, n in zip(share_b, n_b)]})


@settings(max_examples=60, deadline=None)
@given(item_tables)
def test_swapping_a_and_b_flips_the_difference_and_keeps_the_p_value(drawn):
    items = _items(drawn)
    ab = paired_test(items)
    ba = paired_test(items.rename(columns={"n_a": "n_b", "n_b": "n_a", "c_a": "c_b", "c_b": "c_a"}))
    assert np.isclose(ab["difference"], -ba["difference"])
    assert np.isclose(ab["p_value"], ba["p_value"], rtol=1e-12)
    assert ab["test"] == ba["test"] == (MCNEMAR if (items.n_a == 1).all() and (items.n_b == 1).all() else SIGN_FLIP)
    if not np.isnan(ab["low"]): assert ab["low"] <= ab["difference"] <= ab["high"]


@settings(max_examples=30, deadline=None)
@given(item_tables)
def test_a_model_against_itself_shows_no_difference(drawn):
    items = _items(drawn).assign(n_b=lambda f: f.n_a, c_b=lambda f: f.c_a)
    result = paired_test(items)
    assert result["difference"] == 0 and result["p_value"] == 1.0


def test_sign_flip_is_exact_for_few_items():
    items = pd.DataFrame({"case": list("abcde"), "n_a": 3, "n_b": 3, "c_a": 3, "c_b": 0})
    assert paired_test(items)["p_value"] == pytest.approx(2 / 2 ** 5)  # all five differences positive: 2 of 32 patterns


def test_compare_models_pairs_only_shared_items(runs):
    before, _ = runs
    result = compare_models(before, SONNET, GEMINI)
    frame = attempt_successes(before)
    shared = (set(map(tuple, frame[frame.model == SONNET][["case", "surface"]].values))
              & set(map(tuple, frame[frame.model == GEMINI][["case", "surface"]].values)))
    assert set(result.items.index) == shared
    assert result.test == SIGN_FLIP and result.p_value < 0.05 and result.difference > 0
    assert (result.disagreements.difference != 0).all()
    assert list(result.disagreements.difference.abs()) == sorted(result.disagreements.difference.abs(), reverse=True)
    with pytest.raises(ValueError, match="no counted attempt of 'nobody'"):
        compare_models(before, SONNET, "nobody")


def test_a_verdict_column_plugs_in_as_success(runs):
    before, _ = runs
    attempts = before.attempts
    # a stand-in verdict: completed attempts on the meta surface only count as clean
    clean = (attempts.ended_by == "completed") & (attempts.surface == "meta")
    judged = clean[attempts.ended_by != "skipped"]
    r = rates(before, judged)
    assert r.numerator.sum() == clean.sum() and r.denominator.sum() == len(judged)
    assert compare_models(before, SONNET, GPT, judged).items.index.get_level_values("surface").nunique() == 3


# Runs

def test_compare_runs_finds_the_deliberate_regression(runs):
    before, after = runs
    result = compare_runs(before, after)
    assert result.regressions == [GEMINI]
    assert result.models.loc[SONNET, "verdict"] == NO_CHANGE
    expected = multipletests(result.models.p_value, method="holm")[1]
    assert np.allclose(result.models.p_holm, expected)
    assert set(result.gone.index.get_level_values("case")) == {"MT-001"}
    assert not set(result.new.index) & set(result.items.index)


def test_a_run_compared_with_itself_shows_no_change(runs):
    before, _ = runs
    result = compare_runs(before, before)
    assert (result.models.verdict == NO_CHANGE).all() and (result.models.difference == 0).all()
    assert (result.models.p_value == 1).all() and result.new.empty and result.gone.empty


def test_regenerated_runs_compare_the_same(tmp_path, runs):
    trees = [load(write_tree(tmp_path / name, **EXAMPLE_RUNS[name])) for name in EXAMPLE_RUNS]
    pd.testing.assert_frame_equal(compare_runs(*trees).models, compare_runs(*runs).models)


def test_runs_of_one_tree(tmp_path, runs):
    for name, path in zip(EXAMPLE_RUNS, example_runs()):
        write_tree(tmp_path / name, **EXAMPLE_RUNS[name])
    history = load(tmp_path)
    commits = history.runs.sort_values("started_at").commit.astype(str).unique()
    assert len(commits) == 2
    result = compare_runs(runs_of(history, commits[0]), runs_of(history, commits[1]))
    pd.testing.assert_frame_equal(result.models, compare_runs(*runs).models)
    with pytest.raises(ValueError, match="names no single run id or commit"):
        runs_of(history, "0000")


def test_run_comparison_json_shape(runs):
    record = json.loads(json.dumps(run_comparison_records(compare_runs(*runs))))
    model = record["models"][0]
    assert {"model", "before", "after", "difference", "low", "high", "test", "p_value", "p_holm", "verdict"} <= set(model)
    assert set(model["before"]) >= {"numerator", "denominator", "text", "rate", "low", "high"}
    assert {m["verdict"] for m in record["models"]} <= {"regression", "improvement", "no change"}
    case = record["cases"][0]
    assert set(case["before"]) == set(case["after"]) == {"numerator", "denominator"}


def test_cost_success(runs):
    before, _ = runs
    spend = cost_success(before)
    priced = spend.dropna(subset=["cost_per_attempt"])
    frame = attempt_successes(before)
    for model, row in priced.iterrows():
        part = frame[frame.model == model]
        assert np.isclose(row.cost_per_attempt, part.cost.mean())
        assert np.isclose(row.cost_per_success, part.cost.sum() / part.success.sum())
    assert spend.pareto.sum() >= 1 and not spend.loc[spend.cost_per_attempt.isna(), "pareto"].any()


# Summary and command line

def test_summary_json_rows(capsys, runs):
    assert main(["summary", str(example_runs()[0]), "--json", "--k", "3"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    table = summary(runs[0])
    assert [r["model"] for r in rows] == [str(m) for m in table.index]
    for row in rows:
        completion = row["completion"]
        assert (completion["low"], completion["high"]) == wilson(completion["numerator"], completion["denominator"])
        assert completion["text"] == f"{completion['numerator']}/{completion['denominator']}"
        assert set(row["pass_at_k"]) == set(row["pass_hat_k"]) == {"k", "value", "low", "high", "cases", "left_out"}
    assert rows == [{**r, **{k: rows[i][k] for k in ("pass_at_k", "pass_hat_k")}} for i, r in enumerate(summary_records(table))]


def test_summary_json_is_pure_json_on_stdout():
    done = subprocess.run([sys.executable, "-c", "import sys; from modelrecord.cli import main; sys.exit(main())",
                           "summary", "--json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["rows"]


def test_compare_command_exit_codes(capsys):
    before, after = map(str, example_runs())
    assert main(["compare", before, after]) == 0
    assert "regression" in capsys.readouterr().out
    assert main(["compare", before, after, "--fail-on-regression"]) == 1
    assert main(["compare", before, before, "--fail-on-regression"]) == 0
    assert main(["compare", before, after, "--fail-on-regression", "--alpha", "0.0001"]) == 0
    capsys.readouterr()
    assert main(["compare", before, after, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [m["verdict"] for m in out["models"]].count(REGRESSION) == 1
    for argv in (["compare", before], ["compare", before, after, "--runs", "a", "b"], ["compare", before, "--commits", "x", "y"],
                 ["compare", before, after, "--alpha", "2"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err  # the compare command's usage, then why
        assert err.startswith("usage: modelrecord compare ") and err.splitlines()[-1].startswith("modelrecord: ")


def test_compare_refuses_a_bad_tree(tmp_path, capsys):
    bad = tmp_path / "modeleval-bad.jsonl"
    bad.write_text('{"schema":1,"type":"attempt","attempt":{"id":"a","case":"c","model":"m","ended_by":"done"}}\n')
    assert main(["compare", str(bad), str(example_runs()[1])]) == 1
    assert "attempt.ended_by" in capsys.readouterr().err


def test_statistics_are_imported_only_when_used():
    code = ("import sys, modelrecord, modelrecord.summary, modelrecord.compare; "
            "print(sorted(m for m in ('scipy', 'statsmodels') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_compare_command_runs_of_one_tree(tmp_path, capsys):
    for name in EXAMPLE_RUNS: write_tree(tmp_path / name, **EXAMPLE_RUNS[name])
    runs = load(tmp_path).runs.sort_values("started_at")
    ids = [",".join(runs.run_id[runs.commit == commit].astype(str)) for commit in runs.commit.astype(str).unique()]
    assert main(["compare", str(tmp_path), "--runs", *ids, "--json", "--fail-on-regression"]) == 1
    by_runs = json.loads(capsys.readouterr().out)
    assert main(["compare", *(str(tmp_path / name) for name in EXAMPLE_RUNS), "--json"]) == 0
    assert by_runs["models"] == json.loads(capsys.readouterr().out)["models"]
    assert main(["compare", str(tmp_path), "--runs", ids[0].split(",")[0], "nope"]) == 2
    assert "'nope' names no single run id or commit" in capsys.readouterr().err


# Verdicts as success

@pytest.fixture(scope="module")
def scored_runs():
    "The bundled runs loaded with their content and scored, each against its own key."
    return tuple(score(load(path, content=True), path / "key.json", progress=False) for path in example_runs())


def completed_but_wrong(scores):
    "The attempts that ended `completed` by the model's account but that the key judges failed."
    ended = scores.tables.attempts.ended_by == "completed"
    return scores.attempts.index[ended.to_numpy() & (scores.attempts.outcome == "failed").to_numpy()]


def test_a_completed_but_wrong_attempt_is_a_failure_with_a_key(scored_runs):
    before = scored_runs[0]
    wrong = completed_but_wrong(before)
    assert len(wrong) > 0
    assert attempt_successes(before.tables).success[wrong].all()  # without a key: a success
    for verdict in SUCCESS_VERDICTS:
        assert not attempt_successes(before, verdict=verdict).success[wrong].any(), verdict
        assert not verdict_success(before, verdict)[wrong].any()
    # the same through the key itself, and in the per-item counts the tests run on
    by_key = repeats(before.tables, key=example_runs()[0] / "key.json")
    assert by_key.c.sum() == verdict_success(before).sum() < repeats(before.tables).c.sum()


def test_verdict_success_counts_what_the_score_table_counts(scored_runs):
    before = scored_runs[0]
    published = before.table("model")
    for verdict, column in (("clean", "clean"), ("completed", "completion"), ("unaided", "unaided")):
        judged = rates(before, verdict=verdict)
        assert judged.numerator.tolist() == published[f"{column}_numerator"].tolist()
        assert judged.denominator.tolist() == published[f"{column}_denominator"].tolist()
        assert np.allclose(judged[["low", "high"]], published[[f"{column}_low", f"{column}_high"]])


def test_every_comparison_takes_scores_or_a_key(scored_runs):
    before, after = scored_runs
    key = example_runs()[0] / "key.json"
    pair = compare_models(before, SONNET, GEMINI)
    assert pair.success == "verdict clean" and "success = verdict clean" in repr(pair)
    assert pair.items.equals(compare_models(before.tables, SONNET, GEMINI, key=key).items)
    assert not pair.items.equals(compare_models(before.tables, SONNET, GEMINI).items)  # completed is kinder
    assert compare_models(before, SONNET, GEMINI, verdict="completed").success == "verdict completed"
    for function in (pass_at_k, pass_hat_k):
        assert function(before, 2).equals(function(before.tables, 2, key=key))
    assert consistency(before).equals(consistency(before.tables, key=key))
    assert cost_success(before).equals(cost_success(before.tables, key=key))
    with pytest.raises(ValueError, match="needs an answer key"):
        compare_models(before.tables, SONNET, GEMINI, verdict="clean")
    with pytest.raises(ValueError, match="not both"):
        compare_models(before, SONNET, GEMINI, key=key)
    with pytest.raises(ValueError, match="must be one of clean, completed, unaided"):
        rates(before, verdict="tidy")


def test_compare_runs_with_verdicts(scored_runs):
    before, after = scored_runs
    result = compare_runs(before, after)
    assert result.success == "verdict clean" and result.regressions == [GEMINI]
    keys = tuple(path / "key.json" for path in example_runs())
    same = compare_runs(before.tables, after.tables, key=keys)
    pd.testing.assert_frame_equal(result.models, same.models)
    itself = compare_runs(before, before)
    assert (itself.models.verdict == NO_CHANGE).all() and (itself.models.p_value == 1).all()
    assert run_comparison_records(result)["success"] == "verdict clean"
    with pytest.raises(ValueError, match="count success differently"):
        compare_runs(before, after.tables)


def test_compare_command_with_a_key(capsys):
    before, after = map(str, example_runs())
    keys = [f"{before}/key.json", f"{after}/key.json"]
    assert main(["compare", before, after, "--key", *keys, "--json", "--fail-on-regression"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["success"] == "verdict clean" and [m["model"] for m in out["models"] if m["verdict"] == REGRESSION] == [GEMINI]
    assert main(["compare", before, after, "--key", keys[1], "--verdict", "unaided", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["success"] == "verdict unaided"
    assert main(["compare", before, after, "--verdict", "clean"]) == 2
    assert "needs an answer key" in capsys.readouterr().err
    assert main(["compare", before, after, "--key", *keys, keys[0]]) == 2
    capsys.readouterr()
    assert main(["compare", before, after, "--key", f"{before}/no-such-key.json"]) == 1
    assert "no-such-key.json" in capsys.readouterr().err


def test_summary_command_with_a_key(capsys, scored_runs):
    before = str(example_runs()[0])
    assert main(["summary", before, "--key", f"{before}/key.json", "--json", "--k", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["success"] == "verdict clean"
    by_verdict = pass_at_k(scored_runs[0], 2)
    for row in out["rows"]:
        assert np.isclose(row["pass_at_k"]["value"], by_verdict.loc[row["model"], "value"])
        clean = row["key"]["clean"]
        assert (clean["low"], clean["high"]) == wilson(clean["numerator"], clean["denominator"])
    assert main(["summary", before, "--verdict", "completed"]) == 2


# The score table's intervals

@settings(max_examples=30, deadline=None)
@given(st.integers(2, 12), st.integers(1, 4), st.integers(0, 2**31))
def test_clustered_proportions_from_counts_is_statsmodels(clusters, size, seed):
    rng = np.random.default_rng(seed)
    trials = rng.integers(1, size + 1, clusters)  # unequal clusters, as steps per case are
    groups = np.repeat(np.arange(clusters), trials)
    values = (rng.random(len(groups)) < rng.random()).astype(float)
    per_case = pd.DataFrame({"row": "r", "case": groups, "y": values}).groupby(["row", "case"]).y.agg(["sum", "size"])
    row = clustered_proportions(per_case["sum"], per_case["size"]).loc["r"]
    assert (row.numerator, row.denominator, row.clusters) == (values.sum(), len(values), clusters)
    assert np.allclose((row.low, row.high), proportion_confint(values.sum(), len(values), method="wilson"))
    if trials.max() == 1:
        assert np.isnan(row.clustered_se)
    else:
        fit = sm.OLS(values, np.ones(len(values))).fit(cov_type="cluster", cov_kwds={"groups": groups})
        assert np.isclose(row.clustered_se, fit.bse[0], rtol=1e-9, atol=1e-15)


def test_score_table_intervals_are_the_libraries(scored_runs):
    scores = scored_runs[0]
    table = scores.table(["model", "surface"])
    steps = scores.steps.merge(scores.attempts[["model", "surface", "case", "outcome"]], left_on="attempt_key",
                               right_index=True)
    for name in PROPORTIONS:
        n, d = table[f"{name}_numerator"], table[f"{name}_denominator"]
        known = d > 0
        low, high = proportion_confint(n[known], d[known], method="wilson")
        assert np.allclose(table.loc[known, f"{name}_low"], low) and np.allclose(table.loc[known, f"{name}_high"], high)
        assert table.loc[~known, f"{name}_low"].isna().all()
    # reached, one row by hand: its observations are the required, observed steps of counted attempts, clustered by case
    counted = steps[steps.outcome.isin(["completed", "failed", "over_budget", "malformed"]) & steps.observed & ~steps.optional]
    part = counted[(counted.model == SONNET) & (counted.surface == "meta")]
    hit = (part.reached | (part.decline != "")).astype(float).to_numpy()
    fit = sm.OLS(hit, np.ones(len(hit))).fit(cov_type="cluster", cov_kwds={"groups": pd.factorize(part.case)[0]})
    row = table.loc[(SONNET, "meta")]
    assert (row.reached_numerator, row.reached_denominator) == (hit.sum(), len(hit))
    assert np.isclose(row.reached_se, fit.bse[0]) and row.reached_clusters == part.case.nunique()


def test_score_table_intervals_in_text_and_json(scored_runs):
    scores = scored_runs[0]
    table = scores.table("model")
    text = table_text(table)
    row = table.loc[SONNET]
    low, high = wilson(row.clean_numerator, row.clean_denominator)
    share = row.clean_numerator / row.clean_denominator
    assert f"{row.clean_numerator}/{row.clean_denominator} {share:.0%} [{100 * low:.0f}-{100 * high:.0f}]" in text
    assert "Standard errors clustered by case" in text and f"± {100 * row.clean_se:.1f} ({row.clean_clusters})" in text
    record = next(r for r in scores.to_json("model")["rows"] if r["model"] == SONNET)
    assert record["clean"]["text"] == row.clean and (record["clean"]["low"], record["clean"]["high"]) == (low, high)
    assert record["clean"]["clustered_se"] == row.clean_se and record["clean"]["clusters"] == row.clean_clusters
    assert set(record["overhead"]) == {"numerator", "denominator", "text"}


def test_score_table_is_the_same_from_counts_per_case(scored_runs):
    scores = scored_runs[1]
    by = ["model", "surface"]
    per_case = scores.counts([*by, "case"])
    halves = [per_case.iloc[::2], per_case.iloc[1::2]]  # counts added up from two parts, as Dask would
    added = pd.concat(halves).groupby(level=[0, 1, 2], dropna=False).sum()
    pd.testing.assert_frame_equal(published_table(added), scores.table(by))


# A model that cannot be tested does not stop the others (issue 28)

def _one_item_for(tables, model: str, case: str, surface: str):
    "The tables with `model` narrowed to the attempts of one item (`case` on `surface`), its repeats kept."
    attempts = tables.attempts
    keep = (attempts.model != model) | ((attempts.case == case) & (attempts.surface == surface))
    return tables.where(keep.to_numpy())


def test_a_model_with_one_paired_item_is_not_enough_and_the_others_are_compared(runs):
    from modelrecord.compare import TOO_FEW
    items = [set(map(tuple, t.attempts[t.attempts.model == SONNET][["case", "surface"]].to_numpy())) for t in runs]
    case, surface = sorted(items[0] & items[1])[0]
    before, after = (_one_item_for(tables, SONNET, case, surface) for tables in runs)
    assert (after.attempts.model == SONNET).sum() > 1  # one item, tried several times
    result = compare_runs(before, after)
    sonnet = result.models.loc[SONNET]
    assert sonnet["items"] == 1 and pd.isna(sonnet.test) and np.isnan(sonnet.p_value) and np.isnan(sonnet.p_holm)
    assert sonnet.verdict == TOO_FEW and result.regressions == [GEMINI]
    tested = result.models.drop(index=SONNET)
    assert np.allclose(tested.p_holm, multipletests(tested.p_value, method="holm")[1])  # corrected among the tested only
    assert "not enough paired items" in repr(result) and "nan" not in repr(result)


def test_cost_per_success_with_one_success_is_unknown_not_infinite(runs):
    tables = runs[0]
    success = pd.Series(False, index=tables.attempts.index)
    priced = tables.attempts[tables.attempts.model == SONNET].index
    success[priced[0]] = True
    row = cost_success(tables, success).loc[SONNET]
    assert np.isfinite(row.cost_per_success) and np.isnan(row.per_success_high) and np.isnan(row.per_success_low)
    assert not np.isinf(cost_success(tables, success).select_dtypes("number").to_numpy(float)).any()


def test_an_unknown_run_is_refused_with_the_runs_the_tree_holds(capsys):
    "The refusal of an unknown --runs name lists run ids, not only commits, and the command that lists them (issue 27)."
    tree = str(example_runs()[0].parent)
    assert main(["compare", tree, "--runs", "nope", "x"]) == 2
    err = capsys.readouterr().err
    assert "its runs: 20260929-101614-ee-1-441cc7, " in err and "modelrecord runs TREE" in err
    assert main(["runs", tree, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [run["run_id"] for run in listed][0] in err and sum(run["attempts"] for run in listed) == 756
