"""Reading spend from a file a little more each time: each message counted
once (streamed duplicates, a growing duplicate, subagents), reads across
appends adding up to one read of the whole, a partial last line left for
later, a truncated, replaced or rewritten file read again whole with
``reset``, unreadable lines skipped and counted, Codex's running totals
turned into spend, and a 50 MB line passed over in bounded memory."""
from __future__ import annotations

import json
import os
import tracemalloc

import pytest

from leash.core.state.meterread import MeterCursor, claude_code_files, read_new

from ..support.checkout import ROOT

FIXTURES = ROOT / "tests" / "fixtures"
TRANSCRIPT = FIXTURES / "claude_code_transcript" / "session.jsonl"
ROLLOUT = FIXTURES / "codex_cli_rollout" / "rollout.jsonl"
CLAUDE_TOTALS = [5000, 50, 2000, 500, 0]  # the capture's four requests, subagent's included (MANIFEST.json)


def total(usages) -> list[int]:
    sums = [0] * 5
    for usage in usages:
        sums = [a + b for a, b in zip(sums, usage.counts(), strict=True)]
    return sums


def by_model(usages) -> dict[str, list[int]]:
    models: dict[str, list] = {}
    for usage in usages:
        models.setdefault(usage.model, []).append(usage)
    return {model: total(group) for model, group in models.items()}


def assistant(message_id: str, request_id: str, output: int, *, sidechain: bool = False) -> bytes:
    line = {"type": "assistant", "isSidechain": sidechain, "requestId": request_id, "uuid": f"u-{message_id}-{output}",
            "message": {"id": message_id, "model": "claude-opus-4-8", "role": "assistant", "content": [],
                        "usage": {"input_tokens": 100, "output_tokens": output, "cache_creation_input_tokens": 10,
                                  "cache_read_input_tokens": 1}}}
    return json.dumps(line).encode() + b"\n"


def test_a_captured_session_and_its_subagent_count_each_message_once():
    files = claude_code_files(TRANSCRIPT)
    assert [path.name for path in files] == ["session.jsonl", "agent-a0000000000000001.jsonl"]
    reads = [read_new(path, cli="claude") for path in files]
    usages = [usage for read in reads for usage in read.usages]
    assert total(usages) == CLAUDE_TOTALS
    assert [usage.sidechain for usage in usages] == [False, False, False, True]
    assert all(read.reset and read.skipped_lines == 0 and not read.more for read in reads)
    again = [read_new(path, read.cursor, cli="claude") for path, read in zip(files, reads, strict=True)]
    assert [(read.usages, read.reset, read.bytes_read) for read in again] == [([], False, 0), ([], False, 0)]


def test_a_duplicate_with_larger_figures_adds_only_what_it_adds_even_in_a_later_read(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(assistant("msg_1", "req_1", 1) + assistant("msg_1", "req_1", 1))
    first = read_new(path, cli="claude")
    with path.open("ab") as handle:
        handle.write(assistant("msg_1", "req_1", 500) + assistant("msg_1", "req_1", 500) + assistant("msg_2", "", 7))
    second = read_new(path, first.cursor, cli="claude")
    assert total(first.usages) == [100, 1, 10, 1, 0]
    assert total(second.usages) == [100, 506, 10, 1, 0]  # msg_1's growth (499), then msg_2 whole
    assert total(read_new(path, cli="claude").usages) == [200, 507, 20, 2, 0]


def test_a_message_repeated_long_after_it_was_counted_counts_no_more(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(assistant("msg_0", "r", 5) + b"".join(assistant(f"msg_{n}", "r", 1) for n in range(1, 41)))
    first = read_new(path, cli="claude")
    with path.open("ab") as handle:
        handle.write(assistant("msg_0", "r", 5) + assistant("msg_0", "r", 9))
    later = read_new(path, first.cursor, cli="claude")
    assert len(first.usages) == 41 and later.usages == []


def test_reads_across_appends_add_up_to_one_read_of_the_whole(tmp_path):
    for source, cli in ((TRANSCRIPT, "claude"), (ROLLOUT, "codex")):
        data = source.read_bytes()
        whole = read_new(source, cli=cli)
        path = tmp_path / source.name
        path.write_bytes(b"")
        cursor, usages = None, []
        for cut in range(0, len(data), 997):  # cuts land inside lines
            with path.open("ab") as handle:
                handle.write(data[cut:cut + 997])
            read = read_new(path, cursor, cli=cli)
            assert not read.reset or cursor is None
            cursor, usages = read.cursor, usages + read.usages
        assert total(usages) == total(whole.usages) != [0] * 5
        assert cursor.offset == len(data)


def test_a_partial_last_line_is_left_for_the_next_read(tmp_path):
    path = tmp_path / "t.jsonl"
    line = assistant("msg_1", "req_1", 5)
    path.write_bytes(line[:-20])
    read = read_new(path, cli="claude")
    assert (read.usages, read.skipped_lines, read.cursor.offset) == ([], 0, 0)
    path.write_bytes(line)
    read = read_new(path, read.cursor, cli="claude")
    assert total(read.usages) == [100, 5, 10, 1, 0] and read.cursor.offset == len(line)


def test_a_truncated_file_is_read_again_whole_with_reset(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(assistant("msg_1", "r", 5) + assistant("msg_2", "r", 6))
    first = read_new(path, cli="claude")
    with path.open("r+b") as handle:
        handle.truncate(len(assistant("msg_1", "r", 5)))
    read = read_new(path, first.cursor, cli="claude")
    assert read.reset and total(read.usages) == [100, 5, 10, 1, 0]


def test_a_replaced_file_is_read_again_whole_with_reset(tmp_path):
    path, other = tmp_path / "t.jsonl", tmp_path / "new.jsonl"
    path.write_bytes(assistant("msg_1", "r", 5))
    first = read_new(path, cli="claude")
    other.write_bytes(assistant("msg_1", "r", 5) + assistant("msg_2", "r", 6))
    os.replace(other, path)
    read = read_new(path, first.cursor, cli="claude")
    assert read.reset and total(read.usages) == [200, 11, 20, 2, 0]


def test_a_file_rewritten_in_place_is_read_again_whole_with_reset(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(assistant("msg_1", "r", 5) + assistant("msg_2", "r", 6))
    first = read_new(path, cli="claude")
    with path.open("r+b") as handle:  # same inode, same size, first bytes changed
        handle.write(assistant("msg_3", "r", 5))
        handle.write(assistant("msg_2", "r", 6))
    read = read_new(path, first.cursor, cli="claude")
    assert read.reset and [u.key for u in read.usages] == ["msg_3\x1fr", "msg_2\x1fr"]
    # A rewrite past the first bytes that the bytes before the cursor still show.
    big = [assistant(f"msg_{n}", "r", 5) for n in range(40)]
    path.write_bytes(b"".join(big))
    before = read_new(path, cli="claude")
    with path.open("r+b") as handle:
        handle.seek(len(b"".join(big[:-1])))
        handle.write(assistant("msg_x9", "r", 5))
    read = read_new(path, before.cursor, cli="claude")
    assert read.reset and len(read.usages) == 40


def test_unreadable_lines_are_skipped_and_counted_and_the_rest_read(tmp_path):
    path = tmp_path / "t.jsonl"
    broken = assistant("msg_2", "r", 6)[:-30] + b"\n"                                   # cut short
    malformed = assistant("msg_3", "r", 7).replace(b'"output_tokens": 7', b'"output_tokens": "7"')
    path.write_bytes(assistant("msg_1", "r", 5) + broken + b"not json at all\n" + malformed + b"\n\n"
                     + b'{"type": "user", "message": {"content": "no usage here"}}\n' + assistant("msg_4", "r", 8))
    read = read_new(path, cli="claude")
    assert read.skipped_lines == 3
    assert [u.key for u in read.usages] == ["msg_1\x1fr", "msg_4\x1fr"]


def test_codex_running_totals_become_spend_per_model_and_a_repeated_total_adds_nothing(tmp_path):
    read = read_new(ROLLOUT, cli="codex")
    assert by_model(read.usages) == {"gpt-5-codex": [6000, 420, 0, 5000, 250],
                                     "gpt-5.1-codex-mini": [2000, 80, 0, 5000, 10]}
    assert len(read.usages) == 3  # the repeated total is no spend
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(ROLLOUT.read_bytes())
    first = read_new(path, cli="codex")
    last_line = ROLLOUT.read_bytes().splitlines(keepends=True)[-1]
    with path.open("ab") as handle:
        handle.write(last_line)                                  # the same total again
        handle.write(last_line.replace(b'"input_tokens":18000', b'"input_tokens":18500', 1))
    later = read_new(path, MeterCursor.from_json(json.loads(json.dumps(first.cursor.to_json()))), cli="codex")
    assert by_model(later.usages) == {"gpt-5.1-codex-mini": [500, 0, 0, 0, 0]}


def test_gemini_after_model_payloads_count_the_last_chunk_once(tmp_path):
    payload = json.loads((FIXTURES / "gemini_cli" / "AfterModel.json").read_text())
    chunk = json.loads(json.dumps(payload))
    chunk["llm_response"]["candidates"][0].pop("finishReason")
    chunk["llm_response"]["usageMetadata"]["candidatesTokenCount"] = 3
    path = tmp_path / "after_model.jsonl"
    path.write_text("".join(json.dumps(value) + "\n" for value in (chunk, payload, payload)))  # sent twice
    read = read_new(path, cli="gemini")
    assert [(u.model, u.input, u.output) for u in read.usages] == [("gemini-3.8-flash", 11798, 30)]


def test_a_50_mb_line_is_passed_over_in_bounded_memory_and_counted_once(tmp_path):
    path = tmp_path / "t.jsonl"
    with path.open("wb") as handle:
        handle.write(assistant("msg_1", "r", 5))
        handle.truncate(handle.tell() + (50 << 20))  # 50 MB of one line, sparse: cheap to make
    tracemalloc.start()
    try:
        first = read_new(path, cli="claude")
        with path.open("ab") as handle:
            handle.write(b"\n" + assistant("msg_2", "r", 6))
        second = read_new(path, first.cursor, cli="claude")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 12 << 20, f"peak {peak >> 20} MiB for a 50 MiB line"
    assert (len(first.usages), first.skipped_lines, first.cursor.in_long_line) == (1, 0, True)
    assert (len(second.usages), second.skipped_lines, second.reset) == (1, 1, False)


def test_a_read_stops_at_its_byte_limit_and_the_next_goes_on(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(assistant(f"msg_{n}", "r", n) for n in range(30)))
    cursor, usages, calls = None, [], 0
    while True:
        read = read_new(path, cursor, cli="claude", max_line_bytes=1000, max_read_bytes=1500)
        cursor, usages, calls = read.cursor, usages + read.usages, calls + 1
        if not read.more:
            break
    assert calls > 5 and len(usages) == 30 and total(usages) == total(read_new(path, cli="claude").usages)


def test_a_missing_file_is_an_empty_read_and_a_cursor_that_cannot_be_read_a_whole_read(tmp_path):
    with pytest.raises(ValueError, match="no usage reader for 'aider'"):
        read_new(tmp_path / "none.jsonl", cli="aider")
    read = read_new(tmp_path / "none.jsonl", cli="claude")
    assert read.missing and read.usages == [] and read.cursor == MeterCursor()
    path = tmp_path / "t.jsonl"
    path.write_bytes(assistant("msg_1", "r", 5))
    cursor = read_new(path, cli="claude").cursor
    assert MeterCursor.from_json(json.loads(json.dumps(cursor.to_json()))) == cursor
    for bad in (None, [], {"offset": 3}, dict(cursor.to_json(), offset=-1), dict(cursor.to_json(), seen=[1])):
        fresh = MeterCursor.from_json(bad)
        assert fresh == MeterCursor()
        read = read_new(path, fresh, cli="claude")
        assert read.reset and len(read.usages) == 1
