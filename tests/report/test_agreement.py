"""``agreement()``: labels read from JSON Lines and CSV, matched with rows written as
``tracegrade evaluate --out`` writes them; the unmatched on each side counted and
named; bad labels and bad files an error naming the file and the line."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from tracegrade.model.results import SampleResult, Score
from tracegrade.report.agreement import (
    AgreementInputError,
    AgreementUsageError,
    agreement,
)
from tracegrade.report.labels import LabelsError, read_labels

from .runs import row, write_run

METRIC = "agent_goal_accuracy_with_reference"


def labels_file(path: Path, labels: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(label) + "\n" for label in labels))
    return path


def dominated(tmp_path: Path) -> tuple[Path, Path]:
    """20 samples, the judge and the person passing 19 each and disagreeing on two:
    s0 the judge passes and the person fails, s1 the other way round."""
    rows = [row(i, f"s{i}", **{METRIC: 0.0 if i == 1 else 1.0}) for i in range(20)]
    results = write_run(tmp_path / "results.jsonl", rows, {"thresholds": {METRIC: 0.5}})
    labels = [{"id": f"s{i}", "label": "fail" if i == 0 else "pass"} for i in range(20)]
    return results, labels_file(tmp_path / "labels.jsonl", labels)


def test_one_verdict_dominates_kappa_is_negative_while_ac1_is_high(tmp_path: Path) -> None:
    results, labels = dominated(tmp_path)
    found = agreement(results, labels, resamples=300)
    assert found.metric == METRIC  # the results' only metric
    assert found.scale == "pass/fail"
    assert (found.pass_mark, found.pass_mark_from) == (0.5, "the run's pass mark")
    assert len(found.matched) == 20
    # as in test_agreement_stats: po = .9, kappa = -1/19, AC1 = 161/181
    assert found.measure("agreement").value == pytest.approx(0.9)
    assert found.measure("cohen_kappa").value == pytest.approx(-1 / 19)
    assert found.measure("gwet_ac1").value == pytest.approx(161 / 181)
    assert found.pass_share == pytest.approx(0.95)
    assert found.cross == {(True, True): 18, (True, False): 1, (False, True): 1, (False, False): 0}
    assert [(m.id, m.verdict, m.label, m.reason) for m in found.disagreements] == [
        ("s0", True, 0.0, f"{METRIC} of s0 is 1.0"),
        ("s1", False, 1.0, f"{METRIC} of s1 is 0.0"),
    ]
    ac1 = found.measure("gwet_ac1").interval
    assert ac1.low is not None and ac1.high is not None and ac1.low <= 161 / 181 <= ac1.high
    assert (found.unlabelled, found.unjudged, found.unknown) == ((), (), ())


def test_a_given_pass_mark_overrides_the_run_and_rows_success(tmp_path: Path) -> None:
    rows = [
        SampleResult(0, "a", scores={METRIC: Score(0.6, "fair", success=False)}),
        SampleResult(1, "b", scores={METRIC: Score(0.9, "good", success=True)}),
        SampleResult(2, "c", scores={METRIC: Score(0.2, "poor", success=False)}),
    ]
    results = write_run(tmp_path / "r.jsonl", rows)
    labels = labels_file(
        tmp_path / "l.jsonl",
        [{"id": "a", "label": 1}, {"id": "b", "label": 1}, {"id": "c", "label": 0}],
    )
    own = agreement(results, labels, resamples=10)
    # the rows' own success: a fails, which the person passes: 2 of 3 agree
    assert own.measure("agreement").value == pytest.approx(2 / 3)
    assert [m.id for m in own.disagreements] == ["a"]
    tried = agreement(results, labels, pass_mark=0.5, resamples=10)
    assert (tried.pass_mark, tried.pass_mark_from) == (0.5, "given")
    assert tried.measure("agreement").value == 1.0 and tried.disagreements == ()
    # no threshold anywhere: full marks, which none reaches: a and b disagree
    bare = [
        SampleResult(r.index, r.id, scores={METRIC: Score(r.scores[METRIC].value, "")})
        for r in rows
    ]
    full = agreement(write_run(tmp_path / "bare.jsonl", bare), labels, resamples=10)
    assert (full.pass_mark, full.pass_mark_from) == (1.0, "full marks")
    assert [m.id for m in full.disagreements] == ["a", "b"]


def test_graded_labels_with_ties_from_csv(tmp_path: Path) -> None:
    judge = [0.0, 0.5, 0.5, 1.0, 1.0]
    rows = [row(i, i + 1, **{METRIC: value}) for i, value in enumerate(judge)]  # integer ids
    results = write_run(tmp_path / "r.jsonl", rows)
    labels = tmp_path / "grades.csv"
    # a spreadsheet's file: a byte order mark, a note column, CRLF, an empty row
    labels.write_bytes(
        "\ufeffid,label,note\r\n1,2,meh\r\n2,1,\r\n3,3,\r\n,,\r\n4,3,ok\r\n5,5,best\r\n".encode()
    )
    found = agreement(results, labels, resamples=200)
    assert found.scale == "graded"
    # as in test_agreement_stats: rho = 6.5 / sqrt(85.5), tau-b = 5 / sqrt(72)
    assert found.measure("spearman_rho").value == pytest.approx(6.5 / math.sqrt(85.5))
    assert found.measure("kendall_tau_b").value == pytest.approx(5 / math.sqrt(72))
    assert found.pass_mark is None
    assert found.cross is not None and found.cross[(0.5, 3.0)] == 1
    # rank gaps over n - 1 = 4: judge ranks [1, 2.5, 2.5, 4.5, 4.5], person
    # [2, 1, 3.5, 3.5, 5]: gaps [1, 1.5, 1, 1, .5] / 4; furthest apart first
    assert [(m.id, m.rank_gap) for m in found.disagreements] == [
        (2, 0.375),
        (1, 0.25),
        (3, 0.25),
        (4, 0.25),
        (5, 0.125),
    ]
    assert found.disagreements[0].line == 3  # the CSV line of id 2's label


def test_the_unmatched_on_each_side_are_counted_and_named(tmp_path: Path) -> None:
    rows = [
        row(0, "judged", **{METRIC: 1.0}),
        row(1, "unlabelled", **{METRIC: 1.0}),
        SampleResult(2, "failed", errors={METRIC: "JudgeError: the endpoint refused"}),
        SampleResult(3, "n/a", scores={METRIC: Score.not_applicable("no reference")}),
        SampleResult(4, "rejected", rejected="no messages", place="line 5"),
        SampleResult(5, None, scores={METRIC: Score(1.0, "")}),
        row(6, "other", tool_call_f1=1.0),
    ]
    results = write_run(tmp_path / "r.jsonl", rows)
    labels = labels_file(
        tmp_path / "l.jsonl",
        [
            {"id": "judged", "label": True, "metric": METRIC},
            {"id": "failed", "label": False},
            {"id": "n/a", "label": True},
            {"id": "rejected", "label": True},
            {"id": "other", "label": True},
            {"id": "ghost", "label": False, "metric": METRIC},
            {"id": "judged", "label": 0.3, "metric": "tool_call_f1"},
        ],
    )
    with pytest.raises(AgreementUsageError, match=r"several metrics .* --metric"):
        agreement(results, labels)
    found = agreement(results, labels, metric=METRIC, resamples=10)
    assert [m.id for m in found.matched] == ["judged"]
    assert [(u.id, u.index, u.why) for u in found.unlabelled] == [
        ("unlabelled", 1, "no label"),
        (None, 5, "the row has no id, so no label can name it"),
    ]
    assert [(u.id, u.line, u.why) for u in found.unjudged] == [
        ("failed", 2, "the judgement failed: JudgeError: the endpoint refused"),
        ("n/a", 3, "the metric does not apply: no reference"),
        ("rejected", 4, "the record was rejected: no messages"),
        ("other", 5, "the metric was not run on this record"),
    ]
    assert [(u.id, u.line) for u in found.unknown] == [("ghost", 6)]
    assert found.other_metrics == 1
    assert found.measure("cohen_kappa").value is None  # one sample: one verdict each
    as_json = found.to_dict()
    assert as_json["matched"] == 1 and len(as_json["unjudged"]) == 4
    assert as_json["unknown_labels"] == [
        {"id": "ghost", "why": "no row of the results has this id", "label_line": 6}
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            '{"id": "a", "label": true}\n{"id": "b", "label": "maybe"}\n',
            "line 2: the label 'maybe' is not one",
        ),
        ('{"id": "a", "label": true}\n{"id": "b"}\n', "line 2: no label"),
        ('{"id": "a", "label": NaN}\n', "line 1: not JSON"),
        ('{"id": "a", "label": "-inf"}\n', "line 1: the label '-inf' is not a finite number"),
        ('{"id": true, "label": 1}\n', "line 1: the id True is not a string"),
        ('["a", 1]\n', "line 1: not a JSON object"),
        ('{"id": "a", "label": null}\n', "line 1: the label None is not one"),
        (
            '{"id": "a", "label": 1}\n\n{"id": "a", "label": 0}\n',
            "line 3: a second label of sample 'a' .*line 1",
        ),
        ('{"id": "a", "label": 1, "metric": 5}\n', "line 1: the metric 5 is not"),
        ("\n\n", "holds no labels"),
    ],
)
def test_bad_labels_name_the_file_and_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text(content)
    with pytest.raises(LabelsError, match=f"labels.jsonl(, |: ){message}"):
        read_labels(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("sample,label\na,1\n", "line 1: the header has no id column"),
        ("id,label\na,1\nb,pass,extra\n", "line 3: more cells than the header names"),
        ("id,label\na,1\nb,\n", "line 3: the label '' is not one"),
        ("id,label\na,1\n,0\n", "line 3: the id '' is not"),
    ],
)
def test_bad_csv_labels_name_the_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "labels.csv"
    path.write_text(content)
    with pytest.raises(LabelsError, match=f"labels.csv, {message}"):
        read_labels(path)


def test_verdict_words_and_numbers(tmp_path: Path) -> None:
    path = tmp_path / "l.csv"
    path.write_text("id,label\na,Pass\nb, FAIL \nc,yes\nd,no\ne,1\nf,0\ng,true\nh,0.5\n")
    found = read_labels(path)
    assert [(label.id, label.value, label.verdict) for label in found] == [
        ("a", 1.0, True),
        ("b", 0.0, True),
        ("c", 1.0, True),
        ("d", 0.0, True),
        ("e", 1.0, False),
        ("f", 0.0, False),
        ("g", 1.0, True),
        ("h", 0.5, False),
    ]


def test_mixed_kinds_of_label_and_scale_rules(tmp_path: Path) -> None:
    results = write_run(tmp_path / "r.jsonl", [row(i, f"s{i}", m=i / 4) for i in range(4)])
    mixed = labels_file(
        tmp_path / "mixed.jsonl",
        [{"id": "s0", "label": "pass"}, {"id": "s1", "label": 0.25}],
    )
    with pytest.raises(
        AgreementInputError, match=r"mixed.jsonl, line 1: a pass/fail label .*line 2 has 0.25"
    ):
        agreement(results, mixed)
    graded = labels_file(tmp_path / "g.jsonl", [{"id": "s0", "label": 3}, {"id": "s1", "label": 1}])
    with pytest.raises(AgreementInputError, match=r"g.jsonl, line 1: the label 3 is not pass/fail"):
        agreement(results, graded, scale="pass/fail")
    # 0/1 numbers alone read as pass/fail, or as grades when asked
    ones = labels_file(tmp_path / "o.jsonl", [{"id": "s0", "label": 0}, {"id": "s3", "label": 1}])
    assert agreement(results, ones, resamples=10).scale == "pass/fail"
    assert agreement(results, ones, scale="graded", resamples=10).scale == "graded"


def test_usage_errors_name_the_metrics(tmp_path: Path) -> None:
    results = write_run(tmp_path / "r.jsonl", [row(0, "a", x=1.0, y=1.0)])
    plain = labels_file(tmp_path / "l.jsonl", [{"id": "a", "label": 1}])
    with pytest.raises(AgreementUsageError, match="holds several metrics \\(x, y\\)"):
        agreement(results, plain)
    with pytest.raises(AgreementUsageError, match="no metric z \\(it holds x, y\\)"):
        agreement(results, plain, metric="z")
    other = labels_file(tmp_path / "o.jsonl", [{"id": "a", "label": 1, "metric": "y"}])
    with pytest.raises(AgreementUsageError, match="no label is for metric x"):
        agreement(results, other, metric="x")
    named = labels_file(tmp_path / "n.jsonl", [{"id": "a", "label": 1, "metric": "q"}])
    with pytest.raises(AgreementUsageError, match=r"labels metric q, which .* does not hold"):
        agreement(results, named)


def test_two_rows_of_one_id_are_an_error(tmp_path: Path) -> None:
    results = write_run(tmp_path / "r.jsonl", [row(0, 7, m=1.0), row(1, "7", m=0.0)])
    labels = labels_file(tmp_path / "l.jsonl", [{"id": "7", "label": 1}])
    with pytest.raises(AgreementInputError, match="records 0 and 1 share the id '7'"):
        agreement(results, labels)
