"""The rendering half of `modelrecord publish`: the preset `gitlab-mcp-server` against the reference publisher's own
outputs (tests/data/publish, MIT, see its NOTICE.md), and the `default` plan's additions (intervals, `|` escaped)."""
import copy
import json
import re
from pathlib import Path

import pytest

from modelrecord.pages import (INTERVAL_NOTE, Block, PageError, Plan, PlanError, block_selects, coverage_digest, coverage_text,
                               cross_surface_notes, cross_surface_string, group_by_vendor, key_string, legend_block,
                               load_plan, markdown_table, markers, ratio_cell, record_summary, render_block,
                               render_pages, splice, surface_label, unpublished_rows, vendor_caption, wilson_percent)

DATA = Path(__file__).parent / "data" / "publish"
README, RESULTS = "README.md", "docs/development/testing/model-results.md"


def two_models() -> list:
    "The reference's `twoModels`: one configuration, two models differing in every figure, `clean` left 0 / 0."
    first = {"key": {"model": "anthropic:test-model", "surface": "dynamic", "mode": "default", "tier": "ultimate",
                     "corpus_digest": "corpus-1", "contract_digest": "contract-1", "tool_schema_digest": "tools-1",
                     "repeat": 1},
             "provenance": {"commit": "1" * 40, "date": "2026-09-16", "gitlab_version": "19.3.0", "edition": "enterprise",
                            "tier": "ultimate", "tier_confirmed": True, "surface": "dynamic", "mode": "default",
                            "capability_surface": "full", "token_scopes": ["api"], "served_tools": 2,
                            "provider": "anthropic", "model": "test-model",
                            "request_options": {"temperature": "0", "max_tokens": "4096"}, "repeat": 1,
                            "corpus_digest": "corpus-1", "contract_digest": "contract-1"},
             "counts": {"attempts": 10, "turns": 31, "skipped": 2, "unobserved": 1, "provider_errors": 1,
                        "harness_errors": 0, "gitlab_refused": 1, "outcomes": {"completed": 8, "failed": 2}},
             "columns": {"clean": {"numerator": 0, "denominator": 0},
                         "reached": {"numerator": 18, "denominator": 20},
                         "accepted_first_time": {"numerator": 15, "denominator": 18},
                         "argument_fidelity": {"numerator": 22, "denominator": 24},
                         "confirmation": {"numerator": 3, "denominator": 4},
                         "unaided": {"numerator": 7, "denominator": 10},
                         "completion": {"numerator": 8, "denominator": 10},
                         "overhead": {"discovery": 9, "invalid_params": 3, "steps": 18}},
             "tokens": {"input": 120000, "output": 4200, "cache_created": 30000, "cache_read": 88000}}
    second = copy.deepcopy(first)
    second["key"]["model"] = "openai:other-model"
    second["provenance"].update(provider="openai", model="other-model",
                                request_options={"reasoning_effort": "medium", "max_tokens": "4096"})
    second["counts"] = {"attempts": 10, "turns": 40, "outcomes": {"completed": 5, "failed": 5}}
    second["columns"] = {"reached": {"numerator": 14, "denominator": 20},
                         "accepted_first_time": {"numerator": 9, "denominator": 14},
                         "argument_fidelity": {"numerator": 17, "denominator": 24},
                         "unaided": {"numerator": 3, "denominator": 10},
                         "completion": {"numerator": 5, "denominator": 10},
                         "overhead": {"discovery": 14, "invalid_params": 11, "steps": 14}}  # clean, confirmation absent
    second["tokens"] = {"input": 180000, "output": 9100, "cache_created": 0, "cache_read": 0}
    return [first, second]


def edited(row: dict, **key) -> dict:
    "A copy of `row` with its key's fields changed."
    out = copy.deepcopy(row)
    out["key"].update(key)
    return out


@pytest.fixture(scope="module")
def reference() -> Plan:
    return load_plan("gitlab-mcp-server")


def named(plan: Plan, name: str) -> Block:
    return next(block for block in plan.blocks if block.name == name)


def with_clean_column(golden: str) -> str:
    "The reference's golden block with the Clean column its later commits put first among the figures (`-` here)."
    first_table = golden.split("\n\n")[1].splitlines()
    inserted = ["| Clean ", "| ----: ", "|     - ", "|     - "]
    widened = [re.sub(r"^(\| [^|]+ )", lambda m: m[1] + extra, line) for line, extra in zip(first_table, inserted)]
    return golden.replace("\n".join(first_table), "\n".join(widened))


# --- the preset's bytes against the reference's own outputs --------------------------------------------------------

def test_a_detailed_block_matches_the_reference_golden_file(reference):
    golden = (DATA / "enterprise-dynamic-block.md").read_text(encoding="utf-8")
    got = render_block(named(reference, "ENTERPRISE DYNAMIC RESULTS"), two_models(), reference, 258)
    assert got == with_clean_column(golden).rstrip("\n")


def test_the_golden_block_without_the_clean_column_is_the_same_apart_from_it(reference):
    "The column insertion above touches the figures table alone: the other three tables are the golden's bytes."
    golden = (DATA / "enterprise-dynamic-block.md").read_text(encoding="utf-8")
    got = render_block(named(reference, "ENTERPRISE DYNAMIC RESULTS"), two_models(), reference, 258)
    assert got.split("\n\n")[2:] == golden.rstrip("\n").split("\n\n")[2:]


def pages_root(tmp_path: Path) -> Path:
    (tmp_path / "docs/development/testing").mkdir(parents=True)
    (tmp_path / README).write_bytes((DATA / "README-summaries.md").read_bytes())
    (tmp_path / RESULTS).write_bytes((DATA / "model-results.md").read_bytes())
    return tmp_path


def test_an_empty_record_redraws_the_reference_readme_byte_for_byte(tmp_path, reference):
    drawn = render_pages([], reference, pages_root(tmp_path), 258)
    assert list(drawn) == [README, RESULTS]
    assert drawn[README] == (DATA / "README-summaries.md").read_text(encoding="utf-8")


def test_an_empty_record_redraws_the_reference_results_page_but_its_newer_legend_caption(tmp_path, reference):
    drawn = render_pages([], reference, pages_root(tmp_path), 258)[RESULTS]
    page = (DATA / "model-results.md").read_text(encoding="utf-8")
    start, end = markers("LEGEND")
    outside = lambda text: text[:text.index(start)] + text[text.index(end):]
    assert outside(drawn) == outside(page)  # the four withdrawn blocks, their empty sentences, the prose: all as they were
    old = page[page.index(start):page.index("And one thing no column carries")]
    new = drawn[drawn.index(start):]
    assert new.startswith(old)  # the legend's three tables and their glosses, byte for byte
    assert new[len(old):].startswith(reference.texts["legend_caption_intro"] + "\n\n> Compared as one table because")


def test_the_legend_caption_counts_its_ten_cases_against_the_real_corpus(reference):
    cases = [f"XX-{i:03}" for i in range(1, 11)]
    legend = legend_block(reference, 258)
    assert (f"> Compared as one table because these rows agree on surface `dynamic`, mode `default`, tier `free`, "
            f"corpus `example-corpus`, 10 of 258 cases (`{coverage_digest(cases)}`), contract `example-contract`, "
            "tool schemas `example-tools`, repeat 1.\n\n" + reference.texts["legend_closing"]) in legend
    assert legend.endswith(reference.texts["legend_closing"])


def test_the_preset_keeps_pipes_unescaped_and_prints_no_interval(reference):
    rows = [edited(two_models()[0], model="odd|model")]
    body = render_block(named(reference, "ENTERPRISE DYNAMIC SUMMARY"), rows, reference, 258)
    assert "| `odd|model` |" in body and "[" not in body


# --- empty states, selection, grouping -------------------------------------------------------------------------------

def test_every_block_with_no_row_says_its_empty_sentence(reference):
    for block in reference.blocks:
        if block.kind == "legend": continue
        assert render_block(block, [], reference, 258) == block.empty != ""
    assert render_block(Plan().blocks[1], [], Plan(), None) == "Nothing is published yet."


def test_a_block_selects_by_surface_and_licence(reference):
    free = edited(two_models()[0], tier="free")
    assert render_block(named(reference, "ENTERPRISE DYNAMIC SUMMARY"), [free], reference, 258) == \
        named(reference, "ENTERPRISE DYNAMIC SUMMARY").empty
    assert render_block(named(reference, "DYNAMIC SUMMARY"), [free], reference, 258).startswith("Compared as one table")
    assert render_block(named(reference, "META SUMMARY"), [free], reference, 258) == named(reference, "META SUMMARY").empty


def test_a_block_may_name_its_tiers_outright():
    plan = Plan(blocks=[Block(name="R", page="docs/model-results.md", kind="summary", licensed=["free"])])
    assert block_selects(plan.blocks[0], edited(two_models()[0], tier="free"), plan)
    assert not block_selects(plan.blocks[0], two_models()[0], plan)
    unlicensed = Block(name="U", page="docs/model-results.md", kind="summary", licensed="unlicensed")
    assert [block_selects(unlicensed, edited(two_models()[0], tier=t), plan) for t in ("free", "premium")] == [True, False]


def test_the_legend_never_counts_as_publishing_a_row(reference):
    individual = edited(two_models()[0], surface="individual", slice_size=128)
    legend_only = Plan(blocks=[Block(name="LEGEND", page="docs/model-results.md", kind="legend")])
    assert unpublished_rows([individual], reference) == [key_string(individual["key"])]
    assert unpublished_rows(two_models(), legend_only) == [key_string(r["key"]) for r in two_models()]


def test_two_configurations_are_two_captioned_tables_in_caption_order(reference):
    rows = two_models() + [edited(two_models()[0], mode="read-only")]
    body = render_block(named(reference, "ENTERPRISE DYNAMIC RESULTS"), rows, reference, 258)
    captions = re.findall(r"^Compared as one table because these rows agree on (.*)\.$", body, re.M)
    assert captions == sorted(captions) and len(captions) == 2 and "mode `read-only`" in captions[1]
    assert [[r["key"]["model"] for r in group] for _, group in group_by_vendor(rows[::-1])] == \
        [["anthropic:test-model", "openai:other-model"], ["anthropic:test-model"]]


def test_rows_covering_different_cases_are_apart_even_of_one_size():
    a, b = two_models()
    a["cases"], b["cases"] = {"C-1": {}, "C-2": {}}, {"C-1": {}, "C-3": {}}
    assert vendor_caption(a, 258) != vendor_caption(b, 258) and len(group_by_vendor([a, b], 258)) == 2
    b["cases"] = {"C-2": {}, "C-1": {}}
    assert vendor_caption(a, 258) == vendor_caption(b, 258)


def test_an_opaque_meta_table_says_what_it_cannot_be_compared_with(reference):
    meta = edited(two_models()[0], surface="meta", meta_param_schema="opaque")
    body = render_block(named(reference, "ENTERPRISE META SUMMARY"), [meta], reference, 258)
    assert body.endswith("|\n\n" + reference.texts["opaque_note"])
    compact = edited(meta, meta_param_schema="compact")
    assert "withholds parameter" not in render_block(named(reference, "ENTERPRISE META SUMMARY"), [compact], reference, 258)
    assert "withholds parameter" in render_block(Plan().blocks[1], [meta], Plan(), 258)  # a block of `all` surfaces too


# --- cross-surface notes -------------------------------------------------------------------------------------------

def test_a_cross_surface_note_names_the_peer_and_what_it_decided(reference):
    rows = two_models()
    individual = edited(rows[0], surface="individual", slice_size=128, tool_schema_digest="tools-ind")
    individual["counts"]["shown"] = {"min": 96, "max": 312, "overflowed": 2}
    meta = edited(rows[0], surface="meta", meta_param_schema="opaque", tool_schema_digest="tools-meta")
    note = cross_surface_notes(rows, rows + [meta, individual])
    assert note == ("Cross-surface comparisons this table takes part in:\n\n- `anthropic:test-model` may be read beside "
                    "its `individual` row (slice of 128 tools (shown 96 to 312, 2 over budget)) and its `meta` row "
                    "(meta schema `opaque`): they agree on model `anthropic:test-model`, mode `default`, tier "
                    "`ultimate`, corpus `corpus-1`, contract `contract-1`, repeat 1.\n")
    body = render_block(named(reference, "ENTERPRISE DYNAMIC RESULTS"), rows + [meta], reference, 258)
    assert body.endswith("\n\n" + cross_surface_notes(rows, rows + [meta]).rstrip("\n"))


def test_a_row_agreeing_on_another_surface_but_its_coverage_is_no_peer():
    rows = two_models()
    meta = edited(rows[0], surface="meta")
    meta["cases"] = {"C-1": {}}
    assert cross_surface_notes(rows, rows + [meta], 258) == ""
    assert cross_surface_string(meta, 258).endswith(f"1 of 258 cases (`{coverage_digest(['C-1'])}`), contract `contract-1`, repeat 1")


def test_the_summary_counts_tables_and_cross_surface_comparisons():
    rows = two_models()
    meta = edited(rows[0], surface="meta", tool_schema_digest="tools-meta")
    alone = edited(rows[0], model="openai:only-here")
    assert record_summary([rows[0], meta, alone]) == "3 row(s), 2 cross-vendor table(s), 1 cross-surface comparison(s)"


# --- cells and the table layout ------------------------------------------------------------------------------------

@pytest.mark.parametrize("n, d, text", [(8, 10, "8 / 10 [49–94]"), (0, 10, "0 / 10 [0–28]"), (10, 10, "10 / 10 [72–100]"),
                                        (1, 1, "1 / 1 [21–100]"), (0, 0, "-"), (50, 100, "50 / 100 [40–60]")])
def test_a_ratio_reads_with_its_wilson_interval(n, d, text):
    assert ratio_cell({"numerator": n, "denominator": d}, intervals=True) == text


def test_a_page_interval_is_the_one_the_summaries_print():
    "The pages' Wilson interval (standard library only) agrees with `summary.wilson`, the explorer's and the CLI's."
    summary = pytest.importorskip("modelrecord.summary")
    for n, d in [(0, 1), (3, 7), (8, 10), (17, 19), (250, 258), (1, 1000)]:
        low, high = summary.wilson(n, d)
        assert wilson_percent(n, d) == (int(low * 100 + 0.5), int(high * 100 + 0.5))


def test_the_default_plan_gives_every_ratio_its_interval_but_overhead():
    body = render_block(Plan().blocks[1], two_models(), Plan(), 258)
    figures = body.split("\n\n")[1].splitlines()
    assert figures[2].split("|")[8].strip() == "8 / 10 [49–94]"
    assert figures[2].split("|")[9].strip() == "12 / 18 (9 find, 3 invalid_params)"


def test_a_pipe_in_a_cell_is_escaped_by_the_default_plan():
    rows = [edited(two_models()[0], model="odd|model")]
    rows[0]["provenance"]["request_options"] = {"stop": "a|b"}
    body = render_block(Plan().blocks[1], rows, Plan(), 258)
    assert "| `odd\\|model` |" in body and "`stop=a\\|b`" in body
    assert all(line.count("|") - line.count("\\|") == 10 for line in body.split("\n\n")[1].splitlines())


def test_the_table_layout_pads_to_the_widest_cell_with_minimum_widths():
    table = markdown_table(["M", "R", "C"], [["a", "1", "x"], ["bbbbb", "22", "yy"]], "lrc")
    assert table == ("| M     |    R |   C   |\n"
                     "| ----- | ---: | :---: |\n"
                     "| a     |    1 |   x   |\n"
                     "| bbbbb |   22 |  yy   |\n")
    assert len({len(line) for line in table.splitlines()}) == 1


def test_the_provenance_table_spells_what_produced_each_row(reference):
    row = two_models()[0]
    row["provenance"].update(request_options=None, token_scopes=None, commit="abc1234")
    body = render_block(named(reference, "ENTERPRISE DYNAMIC RESULTS"), [row], reference, 258)
    assert body.splitlines()[-1] == ("| `anthropic:test-model` | `anthropic` | `abc1234` | 2026-09-16 | 19.3.0 enterprise "
                                     "|            2 |              | -               |")


# --- keys, coverage, labels ----------------------------------------------------------------------------------------

def fnv1a64(data: bytes) -> int:
    "FNV-1a 64, written out from its definition."
    value = 0xCBF29CE484222325
    for byte in data: value = ((value ^ byte) * 0x100000001B3) % 2**64
    return value


def test_the_coverage_digest_is_fnv1a_64_over_sorted_ids_each_ending_in_a_zero_byte():
    assert fnv1a64(b"a") == 0xAF63DC4C8601EC8C and fnv1a64(b"") == 0xCBF29CE484222325  # the published test vectors
    assert coverage_digest(["b", "ä"]) == format(fnv1a64("b".encode() + b"\0" + "ä".encode() + b"\0"), "x")
    small = next(f"C-{i}" for i in range(10_000) if fnv1a64(f"C-{i}".encode() + b"\0") < 2**60)
    assert len(coverage_digest([small])) < 16  # no zero padding
    assert coverage_text(["a", "b"], 2) == "the whole corpus (2 cases)"


def test_a_key_string_names_its_optional_parts_only_when_set():
    key = two_models()[0]["key"]
    assert key_string(key) == ("model=anthropic:test-model surface=dynamic mode=default tier=ultimate corpus=corpus-1 "
                               "contract=contract-1 tools=tools-1 repeat=1")
    assert key_string({**key, "slice_size": 0, "tier_pin": "", "meta_param_schema": None}) == key_string(key)
    assert key_string({"model": "m"}) == "model=m surface= mode= tier= corpus= contract= tools= repeat=0"


def test_a_surface_label_prints_the_span_shown():
    row = {"key": {"slice_size": 64}, "counts": {"shown": {"min": 64, "max": 80}}}
    assert surface_label(row) == "slice of 64 tools (shown 64 to 80)"
    assert surface_label({"key": {"slice_size": 64}, "counts": {}}) == "slice of 64 tools"


# --- splicing and pages ----------------------------------------------------------------------------------------------

def test_pages_are_refused_by_name_before_anything_is_written(tmp_path, reference):
    root = pages_root(tmp_path)
    page = (root / RESULTS).read_text(encoding="utf-8")
    start, end = markers("META RESULTS")
    (root / RESULTS).write_text(page.replace(start, "@@").replace(end, start).replace("@@", end), encoding="utf-8")
    before = {p: (root / p).read_bytes() for p in (README, RESULTS)}
    with pytest.raises(PageError, match=re.escape(f"{RESULTS}: end marker {end} not found after start marker")):
        render_pages(two_models(), reference, root, 258)
    assert {p: (root / p).read_bytes() for p in (README, RESULTS)} == before
    (root / README).unlink()
    with pytest.raises(PageError, match="read README.md: No such file or directory"):
        render_pages([], reference, root, 258)


def test_a_splice_keeps_the_page_around_the_block_and_its_line_endings():
    page = "top\r\n<!-- START MODEL EVAL X -->\r\nold\r\n<!-- END MODEL EVAL X -->\r\nbottom\r\n"
    assert splice(page, "X", "new", "p.md") == "top\r\n<!-- START MODEL EVAL X -->\n\nnew\n<!-- END MODEL EVAL X -->\r\nbottom\r\n"
    with pytest.raises(PageError, match="p.md: start marker <!-- START MODEL EVAL Y --> not found"):
        splice(page, "Y", "", "p.md")


def test_a_page_that_is_not_utf8_is_refused(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/model-results.md").write_bytes(b"\xff<!-- START MODEL EVAL LEGEND -->")
    with pytest.raises(PageError, match="read docs/model-results.md: not UTF-8 text"):
        render_pages([], Plan(), tmp_path, None)


# --- plans -----------------------------------------------------------------------------------------------------------

def test_the_reference_preset_is_the_bundled_file_field_for_field(reference):
    bundled = json.loads((Path(__file__).parents[1] / "modelrecord/data/publish-preset.json").read_text())
    assert [b.name for b in reference.blocks] == [b["name"] for b in bundled["blocks"]]
    assert [b.empty for b in reference.blocks if b.kind != "legend"] == [b["empty"] for b in bundled["blocks"] if "empty" in b]
    assert (reference.pages, reference.output_prefix, reference.record_note) == \
        (bundled["pages"], bundled["output_prefix"], bundled["record_note"])
    assert reference.texts == {**bundled["texts"], "interval_note": INTERVAL_NOTE}  # ours, drawn only with intervals
    assert reference.messages == bundled["messages"]


def test_a_plan_file_in_yaml_or_json_overrides_what_it_names(tmp_path):
    pytest.importorskip("yaml")
    (tmp_path / "plan.yaml").write_text("record: results.json\npages: [RESULTS.md]\nescape_pipes: false\n"
                                        "texts: {apart_intro: Counted apart.}\nblocks:\n"
                                        "  - {name: ALL, page: RESULTS.md, kind: detailed, licensed_tiers: any}\n")
    plan = load_plan("plan.yaml", tmp_path)  # relative to the root when not found from the cwd
    assert (plan.record, plan.escape_pipes, plan.intervals, plan.blocks[0].licensed) == ("results.json", False, True, "any")
    assert plan.texts["apart_intro"] == "Counted apart." and plan.texts["tokens_intro"].startswith("Tokens, never")
    (tmp_path / "plan.json").write_text(json.dumps({"pages": ["A.md"], "blocks": [{"name": "X", "page": "B.md", "kind": "legend"}]}))
    with pytest.raises(PlanError, match=r"plan.json: blocks\[0\].page: 'B.md' is not one of the plan's pages \(A.md\)"):
        load_plan(tmp_path / "plan.json")
    (tmp_path / "twice.json").write_text(json.dumps({"blocks": [{"name": "X", "page": "docs/model-results.md", "kind": "legend"}] * 2}))
    with pytest.raises(PlanError, match=r"blocks\[1\].name: 'X' names two blocks"):
        load_plan(tmp_path / "twice.json")
    (tmp_path / "list.json").write_text("[]")
    with pytest.raises(PlanError, match="a plan is a mapping of fields, not list"):
        load_plan(tmp_path / "list.json")


# --- properties ------------------------------------------------------------------------------------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402

_cell = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=12)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4).flatmap(lambda n: st.tuples(st.lists(_cell, min_size=n, max_size=n),
                                                     st.lists(st.lists(_cell, min_size=n, max_size=n), max_size=4),
                                                     st.text("lrc", min_size=n, max_size=n))))
def test_a_table_reads_back_as_the_cells_it_was_given(table):
    "Every line as long as the others, and splitting a line on its unescaped `|` gives back the escaped cells."
    headers, cells, align = table
    drawn = markdown_table(headers, cells, align, escape_pipes=True).splitlines()
    assert len({len(line) for line in drawn}) == 1 and len(drawn) == len(cells) + 2
    for line, row in zip([drawn[0]] + drawn[2:], [headers] + cells):
        parts = re.split(r"(?<!\\)\|", line)[1:-1]
        assert [part[1:-1].strip(" ") for part in parts] == [c.replace("|", "\\|").strip(" ") for c in row]


@settings(max_examples=50, deadline=None)
@given(st.text(max_size=40), st.text(max_size=40), st.text(st.characters(blacklist_characters="<"), max_size=40))
def test_a_splice_is_idempotent_and_keeps_what_lies_outside_the_markers(before, after, body):
    start, end = markers("X")
    page = before.replace("<!--", "") + start + "old" + end + after
    once = splice(page, "X", body, "p.md")
    assert splice(once, "X", body, "p.md") == once
    assert once.startswith(before.replace("<!--", "") + start) and once.endswith(end + after)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 500).flatmap(lambda d: st.tuples(st.integers(0, d), st.just(d))))
def test_an_interval_holds_its_rate(ratio):
    numerator, denominator = ratio
    if denominator == 0: return
    low, high = wilson_percent(numerator, denominator)
    assert 0 <= low <= round(100 * numerator / denominator) <= high <= 100
