from __future__ import annotations

from pathlib import Path

import pytest

from tracegrade.cli.config import ConfigError, ProjectConfig, find_config, load_config
from tracegrade.convert import SOURCES
from tracegrade.errors import TracegradeError

KNOWN_KEYS = (
    "concurrency, criteria, fail_under, judge_base_url, judge_cache_max_age_days, "
    "judge_cache_max_mb, judge_max_attempts, judge_model, judge_provider, judge_timeout, "
    "matching, max_cost, max_p90_latency, "
    "metrics, out, pass_k, prices, progress, pull, references, sample_deadline, source, "
    "success, thresholds, tools"
)
TABLE = '[tool.tracegrade]\nmetrics = ["tool_call_f1"]\n'


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository root, so that no file above tmp_path takes part in a search."""
    (tmp_path / ".git").mkdir()
    return tmp_path


# -- finding -----------------------------------------------------------------------------


def test_finds_the_file_in_a_parent_directory(repo: Path) -> None:
    found = write(repo / "a" / "tracegrade.toml", "")
    (repo / "a" / "b" / "c").mkdir(parents=True)
    assert find_config(repo / "a" / "b" / "c") == found
    assert find_config(repo / "a") == found


def test_tracegrade_toml_wins_over_pyproject_in_the_same_directory(repo: Path) -> None:
    write(repo / "pyproject.toml", TABLE)
    own = write(repo / "tracegrade.toml", "")
    assert find_config(repo) == own


def test_the_nearest_directory_wins(repo: Path) -> None:
    write(repo / "tracegrade.toml", "")
    nearer = write(repo / "sub" / "pyproject.toml", TABLE)
    (repo / "sub" / "deeper").mkdir()
    assert find_config(repo / "sub" / "deeper") == nearer


def test_a_pyproject_without_the_table_is_skipped(repo: Path) -> None:
    own = write(repo / "tracegrade.toml", "")
    write(repo / "sub" / "pyproject.toml", '[project]\nname = "x"\n[tool.ruff]\nline-length = 9\n')
    assert find_config(repo / "sub") == own


def test_an_empty_table_counts(repo: Path) -> None:
    pyproject = write(repo / "pyproject.toml", "[tool.tracegrade]\n")
    assert find_config(repo) == pyproject
    assert load_config(pyproject) == ProjectConfig(path=pyproject)


def test_the_search_stops_at_the_repository_root(tmp_path: Path) -> None:
    write(tmp_path / "tracegrade.toml", "")
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "src").mkdir()
    assert find_config(tmp_path / "repo" / "src") is None
    assert find_config(tmp_path / "repo") is None


def test_a_git_file_marks_the_root_too(tmp_path: Path) -> None:
    write(tmp_path / "tracegrade.toml", "")
    write(tmp_path / "worktree" / ".git", "gitdir: /elsewhere\n")
    assert find_config(tmp_path / "worktree") is None


def test_the_repository_root_itself_is_searched(tmp_path: Path) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    pyproject = write(tmp_path / "repo" / "pyproject.toml", TABLE)
    (tmp_path / "repo" / "src").mkdir()
    assert find_config(tmp_path / "repo" / "src") == pyproject


def test_a_relative_start_gives_an_absolute_path(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = write(repo / "tracegrade.toml", "")
    (repo / "sub").mkdir()
    monkeypatch.chdir(repo / "sub")
    assert find_config(Path(".")) == own.resolve()


def test_nothing_found(repo: Path) -> None:
    write(repo / "pyproject.toml", "[project]\n")
    assert find_config(repo) is None


def test_a_broken_pyproject_stops_the_search(repo: Path) -> None:
    pyproject = write(repo / "pyproject.toml", "[tool.tracegrade\n")
    with pytest.raises(ConfigError) as caught:
        find_config(repo)
    assert str(caught.value) == (
        f"{pyproject}: not valid TOML: Expected ']' at the end of a table declaration "
        "(at line 1, column 17)"
    )


def test_a_tool_tracegrade_that_is_not_a_table_is_an_error_when_searching(repo: Path) -> None:
    pyproject = write(repo / "pyproject.toml", "[tool]\ntracegrade = 3\n")
    with pytest.raises(ConfigError) as caught:
        find_config(repo)
    assert str(caught.value) == f"{pyproject}, key tool.tracegrade: must be a table, got 3"


# -- loading -----------------------------------------------------------------------------

EVERY_FIELD = """
metrics = ["tool_call_f1", "tool_correctness:exact_match=true,threshold=0.8"]
source = "langchain"
judge_model = "gpt-4o-mini"
judge_base_url = "http://127.0.0.1:8000/v1"
judge_timeout = 30
judge_max_attempts = 2
sample_deadline = 90.5
judge_cache_max_mb = 256
judge_cache_max_age_days = 30.5
concurrency = 8
out = "results/run.jsonl"
progress = "lines"
pass_k = [1, 3]

[fail_under]
tool_call_f1 = 0.9
tool_correctness = 1

[thresholds]
tool_call_f1 = 0.5
"""


def test_every_field_of_tracegrade_toml(tmp_path: Path) -> None:
    path = write(tmp_path / "tracegrade.toml", EVERY_FIELD)
    config = load_config(path)
    assert config == ProjectConfig(
        metrics=["tool_call_f1", "tool_correctness:exact_match=true,threshold=0.8"],
        fail_under={"tool_call_f1": 0.9, "tool_correctness": 1.0},
        thresholds={"tool_call_f1": 0.5},
        source="langchain",
        judge_model="gpt-4o-mini",
        judge_base_url="http://127.0.0.1:8000/v1",
        judge_timeout=30.0,
        judge_max_attempts=2,
        sample_deadline=90.5,
        judge_cache_max_mb=256.0,
        judge_cache_max_age_days=30.5,
        concurrency=8,
        out=tmp_path / "results" / "run.jsonl",
        progress="lines",
        pass_k=[1, 3],
        path=path,
    )
    assert config.fail_under is not None
    assert type(config.fail_under["tool_correctness"]) is float
    assert type(config.judge_cache_max_mb) is float


def test_every_field_of_pyproject_in_kebab_case(tmp_path: Path) -> None:
    path = write(
        tmp_path / "pyproject.toml",
        """[project]
name = "agent"

[tool.tracegrade]
metrics = ["tool_call_f1:name=f1"]
fail-under = { f1 = 0.75 }
thresholds = { f1 = 0.25 }
source = "tracegrade"
judge-model = "m"
judge-base-url = "http://127.0.0.1:9/v1"
judge-timeout = 5
judge-max-attempts = 1
sample-deadline = 60
judge-cache-max-mb = 0.5
judge-cache-max-age-days = inf
concurrency = 1
out = "r.jsonl"
progress = "off"
pass-k = [5]
""",
    )
    assert load_config(path) == ProjectConfig(
        metrics=["tool_call_f1:name=f1"],
        fail_under={"f1": 0.75},
        thresholds={"f1": 0.25},
        source="tracegrade",
        judge_model="m",
        judge_base_url="http://127.0.0.1:9/v1",
        judge_timeout=5.0,
        judge_max_attempts=1,
        sample_deadline=60.0,
        judge_cache_max_mb=0.5,
        judge_cache_max_age_days=float("inf"),
        concurrency=1,
        out=tmp_path / "r.jsonl",
        progress="off",
        pass_k=[5],
        path=path,
    )


def test_a_subtable_of_pyproject(tmp_path: Path) -> None:
    path = write(tmp_path / "pyproject.toml", "[tool.tracegrade.fail_under]\nexact_match = 0\n")
    assert load_config(path) == ProjectConfig(fail_under={"exact_match": 0.0}, path=path)


def test_out_is_taken_from_the_config_files_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    path = write(tmp_path / "project" / "tracegrade.toml", 'out = "../results/./r.jsonl"\n')
    assert load_config(path).out == tmp_path / "results" / "r.jsonl"
    write(path, f'out = "{tmp_path / "abs.jsonl"}"\n')
    assert load_config(path).out == tmp_path / "abs.jsonl"


def test_a_relative_config_path_is_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "ci.toml", "concurrency = 2\n")
    monkeypatch.chdir(tmp_path)
    assert load_config(Path("ci.toml")) == ProjectConfig(concurrency=2, path=tmp_path / "ci.toml")


def test_any_other_file_name_holds_the_settings_at_the_top_level(tmp_path: Path) -> None:
    path = write(tmp_path / "ci.toml", "[tool.tracegrade]\nconcurrency = 2\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == (
        f"{path}, key tool: unknown key 'tool'; in ci.toml the settings go at the top level, "
        "without [tool.tracegrade]"
    )


def test_sources_tracegrade_and_auto(tmp_path: Path) -> None:
    path = tmp_path / "tracegrade.toml"
    for source in ("tracegrade", "auto", "otel"):
        write(path, f'source = "{source}"\n')
        assert load_config(path).source == source


# -- errors ------------------------------------------------------------------------------

ERRORS = [
    (
        'metric = ["tool_call_f1"]',
        "metric",
        f"unknown key 'metric' (did you mean 'metrics'?); known keys: {KNOWN_KEYS}",
    ),
    ('colour = "red"', "colour", f"unknown key 'colour'; known keys: {KNOWN_KEYS}"),
    (
        "fail-undr = {}",
        "fail-undr",
        f"unknown key 'fail-undr' (did you mean 'fail-under'?); known keys: {KNOWN_KEYS}",
    ),
    (
        "fail_under = {}\nfail-under = {}",
        "fail-under",
        "set twice, as 'fail_under' and 'fail-under'; keep one",
    ),
    (
        "[tool.tracegrade]\nconcurrency = 2",
        "tool",
        "unknown key 'tool'; in tracegrade.toml the settings go at the top level, "
        "without [tool.tracegrade]",
    ),
    (
        'judge_api_key = "sk-1"',
        "judge_api_key",
        "unknown key 'judge_api_key'; the judge's key is read only from "
        "$TRACEGRADE_JUDGE_API_KEY or $OPENAI_API_KEY, never from a file",
    ),
    ('concurrency = "8"', "concurrency", "must be an integer of at least 1, got string '8'"),
    ("concurrency = 0", "concurrency", "must be an integer of at least 1, got 0"),
    (
        "judge_timeout = 0",
        "judge_timeout",
        "must be a positive number of seconds, up to a year, got 0",
    ),
    (
        "sample_deadline = inf",
        "sample_deadline",
        "must be a positive number of seconds, up to a year, got inf",
    ),
    (
        'judge_timeout = "60s"',
        "judge_timeout",
        "must be a positive number of seconds, up to a year, got string '60s'",
    ),
    ("judge_max_attempts = 0", "judge_max_attempts", "must be an integer of at least 1, got 0"),
    ("concurrency = true", "concurrency", "must be an integer of at least 1, got boolean true"),
    ("concurrency = 2.0", "concurrency", "must be an integer of at least 1, got 2.0"),
    ("concurrency = 1979-05-27", "concurrency", "must be an integer of at least 1, got date/time"),
    (
        "fail_under = 0.9",
        "fail_under",
        "must be a table of metric name = number, e.g. {tool_call_f1 = 0.9}, got 0.9",
    ),
    (
        "fail_under = [0.9]",
        "fail_under",
        "must be a table of metric name = number, e.g. {tool_call_f1 = 0.9}, got array",
    ),
    (
        "fail_under = { tool_call_f1 = true }",
        "fail_under.tool_call_f1",
        "must be a number between 0 and 1, got boolean true",
    ),
    (
        "fail_under = { tool_call_f1 = 1.5 }",
        "fail_under.tool_call_f1",
        "must be a number between 0 and 1, got 1.5",
    ),
    (
        "fail_under = { tool_call_f1 = nan }",
        "fail_under.tool_call_f1",
        "must be a number between 0 and 1, got nan",
    ),
    (
        'thresholds = { "my metric" = -1 }',
        'thresholds."my metric"',
        "must be a number between 0 and 1, got -1",
    ),
    (
        'thresholds = { tool_call_f1 = "0.8" }',
        "thresholds.tool_call_f1",
        "must be a number between 0 and 1, got string '0.8'",
    ),
    (
        'metrics = "tool_call_f1"',
        "metrics",
        'must be a non-empty array of metric specs such as ["tool_call_f1", '
        "\"tool_correctness:threshold=0.8\"], got string 'tool_call_f1'",
    ),
    (
        "metrics = []",
        "metrics",
        'must be a non-empty array of metric specs such as ["tool_call_f1", '
        '"tool_correctness:threshold=0.8"], got array',
    ),
    ('metrics = ["tool_call_f1", 3]', "metrics[1]", "must be a non-empty string, got 3"),
    ('metrics = [" "]', "metrics[0]", "must be a non-empty string, got string ' '"),
    (
        'metrics = ["tool_call_f2"]',
        "metrics[0]",
        "unknown metric 'tool_call_f2'; known metrics: agent_goal_accuracy_with_reference, "
        "agent_goal_accuracy_without_reference, cost_budget, criteria, exact_match, "
        "handoff_match, "
        "latency_budget, non_llm_string_similarity, string_presence, token_budget, "
        "tool_call_accuracy, tool_call_efficiency, tool_call_f1, tool_call_validity, "
        "tool_correctness, tool_error_recovery, topic_adherence, trajectory_judge, "
        "trajectory_match",
    ),
    (
        'metrics = ["tool_call_f1:bogus=1"]',
        "metrics[0]",
        "tool_call_f1: cannot read option 'bogus=1'; options are matching, multiset, irrelevance, "
        "agent, name, threshold, given as key=value",
    ),
    (
        'metrics = ["tool_call_f1", "tool_call_f1:threshold=0.8"]',
        "metrics[1]",
        "repeats the metric name 'tool_call_f1'; give each a distinct name= option",
    ),
    (
        'metrics = ["tool_call_f1", "tool_call_accuracy"]\n'
        "fail_under = { tool_call_acuracy = 0.9 }",
        "fail_under.tool_call_acuracy",
        "is not one of this file's metrics (did you mean 'tool_call_accuracy'?): "
        "tool_call_f1, tool_call_accuracy",
    ),
    (
        'metrics = ["tool_call_f1:name=f1"]\nthresholds = { tool_call_f1 = 0.5 }',
        "thresholds.tool_call_f1",
        "is not one of this file's metrics: f1",
    ),
    (
        'source = "langchian"',
        "source",
        "unknown source 'langchian' (did you mean 'langchain'?); known sources: "
        + ", ".join(["tracegrade", *SOURCES]),
    ),
    ("source = 1", "source", "must be a non-empty string, got 1"),
    ('judge_model = ""', "judge_model", "must be a non-empty string, got string ''"),
    ("judge-base-url = {}", "judge-base-url", "must be a non-empty string, got table"),
    ("out = 5", "out", "must be a non-empty string, got 5"),
    (
        "judge_cache_max_mb = 0",
        "judge_cache_max_mb",
        "must be a number of megabytes above 0 (inf for no limit), got 0",
    ),
    (
        "judge-cache-max-mb = -5.5",
        "judge-cache-max-mb",
        "must be a number of megabytes above 0 (inf for no limit), got -5.5",
    ),
    (
        'judge_cache_max_mb = "1GB"',
        "judge_cache_max_mb",
        "must be a number of megabytes above 0 (inf for no limit), got string '1GB'",
    ),
    (
        "judge_cache_max_age_days = nan",
        "judge_cache_max_age_days",
        "must be a number of days above 0 (inf for no limit), got nan",
    ),
    (
        "judge_cache_max_age_days = true",
        "judge_cache_max_age_days",
        "must be a number of days above 0 (inf for no limit), got boolean true",
    ),
    (
        'judge_provider = "claude"',
        "judge_provider",
        "must be one of 'openai', 'anthropic', 'bedrock', 'gemini', got string 'claude'",
    ),
    (
        'progress = "fancy"',
        "progress",
        "must be one of 'auto', 'bar', 'lines', 'off', got string 'fancy'",
    ),
    (
        "progress = false",
        "progress",
        "must be one of 'auto', 'bar', 'lines', 'off', got boolean false",
    ),
    ("pass_k = 3", "pass_k", "must be an array of integers of at least 1, got 3"),
    ("pass_k = [1, 0]", "pass_k[1]", "must be an integer of at least 1, got 0"),
    ('pass_k = ["2"]', "pass_k[0]", "must be an integer of at least 1, got string '2'"),
    ("pass_k = [1, 3, 3]", "pass_k[2]", "repeats 3"),
]


@pytest.mark.parametrize(("text", "key", "rule"), ERRORS)
def test_errors_name_the_file_the_key_and_the_rule(
    tmp_path: Path, text: str, key: str, rule: str
) -> None:
    path = write(tmp_path / "tracegrade.toml", text + "\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert (caught.value.path, caught.value.key, caught.value.rule) == (path, key, rule)
    assert str(caught.value) == f"{path}, key {key}: {rule}"


TWO_FAULTS = [
    ('source = "x"\nconcurrency = 0', "source", "unknown source 'x'"),
    ('concurrency = 0\nsource = "x"', "concurrency", "must be an integer of at least 1, got 0"),
    ('metrics = ["tool_call_f2", 3]', "metrics[0]", "unknown metric 'tool_call_f2'"),
    ('metrics = ["tool_call_f1", 3, "x"]', "metrics[1]", "must be a non-empty string, got 3"),
    ("pass_k = [3, 3, 0]", "pass_k[1]", "repeats 3"),
    ("pass_k = [3, 0, 3]", "pass_k[1]", "must be an integer of at least 1, got 0"),
    (
        'metrics = ["tool_call_f1", "tool_call_f1"]\nfail_under = {x = 2}',
        "metrics[1]",
        "repeats the metric name 'tool_call_f1'",
    ),
    (
        'fail_under = {a = 0.5, b = 2, c = "x"}\nmetrics = ["tool_call_f1"]',
        "fail_under.b",
        "must be a number between 0 and 1, got 2",
    ),
]


@pytest.mark.parametrize(("text", "key", "rule"), TWO_FAULTS)
def test_of_two_faults_the_first_in_the_file_is_named(
    tmp_path: Path, text: str, key: str, rule: str
) -> None:
    path = write(tmp_path / "tracegrade.toml", text + "\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.key == key
    assert caught.value.rule.startswith(rule)


def test_pyproject_errors_name_the_dotted_key(tmp_path: Path) -> None:
    path = write(tmp_path / "pyproject.toml", "[tool.tracegrade.fail_under]\ntool_call_f1 = 2\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == (
        f"{path}, key tool.tracegrade.fail_under.tool_call_f1: "
        "must be a number between 0 and 1, got 2"
    )


def test_pyproject_unknown_key(tmp_path: Path) -> None:
    path = write(tmp_path / "pyproject.toml", "[tool.tracegrade]\nconcurency = 4\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == (
        f"{path}, key tool.tracegrade.concurency: unknown key 'concurency' "
        f"(did you mean 'concurrency'?); known keys: {KNOWN_KEYS}"
    )


def test_a_pyproject_without_the_table(tmp_path: Path) -> None:
    path = write(tmp_path / "pyproject.toml", "[tool.ruff]\nline-length = 100\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == f"{path}: has no [tool.tracegrade] table"
    assert caught.value.key is None


def test_a_toml_syntax_error_names_the_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path / "tracegrade.toml", "concurrency = 2\nout = \n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == f"{path}: not valid TOML: Invalid value (at line 2, column 7)"


def test_a_key_set_twice_is_a_toml_error(tmp_path: Path) -> None:
    path = write(tmp_path / "tracegrade.toml", "concurrency = 2\nconcurrency = 3\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == (
        f"{path}: not valid TOML: Cannot overwrite a value (at line 2, column 16)"
    )


def test_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "tracegrade.toml"
    path.write_bytes(b'judge_model = "caf\xe9"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == f"{path}: not valid TOML: the file is not UTF-8 text"


def test_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "missing.toml"
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == f"{path}: cannot be read: No such file or directory"
    assert isinstance(caught.value, TracegradeError)
