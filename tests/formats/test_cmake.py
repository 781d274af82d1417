from __future__ import annotations

from cudalint.formats.cmake import invocations


def test_invocations_follow_the_cmake_syntax():
    text = (
        "#[[ a bracket comment\n"
        "enable_language(CUDA) ]]\n"
        'PROJECT(x LANGUAGES "CXX" # a comment: CUDA\n'
        "  CUDA)\n"
        "set(S [=[ a ) bracket ]=] $<$<COMPILE_LANGUAGE:CUDA>:-O3>)\n"
    )
    found = [(i.name, i.row, i.column, i.values()) for i in invocations(text)]
    assert found == [
        ("project", 3, 1, ["x", "LANGUAGES", "CXX", "CUDA"]),
        ("set", 5, 1, ["S", " a ) bracket ", "$<$<COMPILE_LANGUAGE:CUDA>:-O3>"]),
    ]


def test_unclosed_input_ends():
    assert [i.name for i in invocations('project(x "unclosed')] == ["project"]
    assert invocations("#[[ never closed") == ()
