"""The provider adapters on the SDKs' own typed responses, built offline as each SDK builds them from the wire."""
import subprocess
import sys

import msgspec
import pytest
from anthropic.types import Message
from google.genai import types as genai
from openai.types.chat import ChatCompletion, ParsedChatCompletion
from openai.types.responses import Response

from modelrecord.providers import api_of, blocks, usage
from modelrecord.reader import read_shards
from modelrecord.record import Block, Turn, Usage
from modelrecord.writer import open_dir, release


def chat(message: dict, usage: dict = None, kind=ChatCompletion):
    return kind.model_validate({"id": "c", "object": "chat.completion", "created": 0, "model": "gpt-5",
                                "choices": [{"index": 0, "finish_reason": "stop",
                                             "message": {"role": "assistant", **message}}],
                                **({"usage": usage} if usage else {})})


def responses(output: list, usage: dict = None):
    return Response.model_validate({"id": "r", "object": "response", "created_at": 0, "model": "gpt-5",
                                    "output": output,
                                    "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
                                    **({"usage": usage} if usage else {})})


def anthropic(content: list, usage: dict):
    return Message.model_validate({"id": "m", "type": "message", "role": "assistant", "model": "claude",
                                   "content": content,
                                   "stop_reason": "end_turn", "stop_sequence": None, "usage": usage})


def gemini(parts: list, usage: dict = None):
    return genai.GenerateContentResponse.model_validate(
        {"candidates": [{"content": {"role": "model", "parts": parts}}], **({"usageMetadata": usage} if usage else {})})


# --- usage: every counter ----------------------------------------------------------------------------

def test_openai_chat_prompt_tokens_include_cached_and_cache_written_and_reasoning_is_output():
    counted = {"prompt_tokens": 5000, "completion_tokens": 700, "total_tokens": 5700,
               "prompt_tokens_details": {"cached_tokens": 3000, "cache_write_tokens": 1200, "audio_tokens": 0},
               "completion_tokens_details": {"reasoning_tokens": 650}}
    assert usage(chat({"content": "x"}, counted)) == Usage(input=800, output=700, cache_created=1200, cache_read=3000)
    assert usage(chat({"content": "x"}, {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12})) == Usage(input=10, output=2)
    assert usage(chat({"content": "x"})) == Usage()  # a server that reports no usage


def test_openai_responses_input_tokens_include_cached_and_reasoning_is_output():
    counted = {"input_tokens": 9000, "output_tokens": 1500, "total_tokens": 10500,
               "input_tokens_details": {"cached_tokens": 8000, "cache_write_tokens": 500},
               "output_tokens_details": {"reasoning_tokens": 1200}}
    assert usage(responses([], counted)) == Usage(input=500, output=1500, cache_created=500, cache_read=8000)
    assert usage(responses([])) == Usage()


def test_anthropic_input_excludes_both_cache_counters():
    assert usage(anthropic([], {"input_tokens": 7, "output_tokens": 300, "cache_creation_input_tokens": 2048,
                                "cache_read_input_tokens": 16000})) == Usage(input=7, output=300, cache_created=2048,
                                                                             cache_read=16000)
    # counters left out
    assert usage(anthropic([], {"input_tokens": 7, "output_tokens": 3})) == Usage(input=7, output=3)


def test_gemini_prompt_includes_cached_content_tool_use_prompt_is_input_and_thoughts_are_output():
    counted = {"promptTokenCount": 3000, "cachedContentTokenCount": 2500, "toolUsePromptTokenCount": 120,
               "candidatesTokenCount": 80, "thoughtsTokenCount": 900, "totalTokenCount": 4100}
    assert usage(gemini([{"text": "x"}], counted)) == Usage(input=620, output=980, cache_read=2500)
    assert usage(gemini([{"text": "x"}], {"promptTokenCount": 10, "candidatesTokenCount": 4})) == Usage(input=10, output=4)
    assert usage(gemini([{"text": "x"}])) == Usage()


def test_counters_that_contradict_each_other_are_refused_with_both_numbers():
    with pytest.raises(ValueError, match="prompt_tokens 10 is less than cached_tokens 20 \\+ cache_write_tokens 0"):
        usage(chat({"content": "x"}, {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11,
                                      "prompt_tokens_details": {"cached_tokens": 20}}))
    with pytest.raises(ValueError, match="prompt_token_count 5 is less than cached_content_token_count 9"):
        usage(gemini([], {"promptTokenCount": 5, "cachedContentTokenCount": 9}))


# --- blocks ------------------------------------------------------------------------------------------

def test_openai_chat_blocks_reasoning_text_refusal_and_tool_calls_in_order():
    completion = chat({"content": "Two calls.", "reasoning_content": "Plan first.", "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "find", "arguments": '{"query": "project"}'}},
        {"id": "b", "type": "function", "function": {"name": "run", "arguments": '{"action": "project.get",'}},
        {"id": "c", "type": "custom", "custom": {"name": "shell", "input": "ls -la"}}]})
    assert blocks(completion) == [
        Block(kind="thinking", text="Plan first."), Block(kind="text", text="Two calls."),
        Block(kind="tool_call", tool="find", arguments=msgspec.Raw(b'{"query": "project"}'), call_id="a"),
        Block(kind="tool_call", tool="run", raw='{"action": "project.get",', call_id="b"),
        Block(kind="tool_call", tool="shell", raw="ls -la", call_id="c")]
    assert blocks(chat({"content": None, "refusal": "I can't help with that."})) == [Block(kind="text",
                                                                                           text="I can't help with that.")]


def test_a_parsed_chat_completion_is_recognised_through_its_base_type():
    parsed = chat({"content": "ok", "parsed": None}, {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
                  kind=ParsedChatCompletion)
    assert api_of(parsed) == "openai-chat" and usage(parsed) == Usage(input=3, output=1)


def test_openai_responses_blocks_in_output_order():
    answer = responses([
        {"type": "reasoning", "id": "rs", "summary": [{"type": "summary_text", "text": "Look it up."},
                                                       {"type": "summary_text", "text": "Then fetch."}]},
        {"type": "message", "id": "m", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "Fetching.", "annotations": []}]},
        {"type": "function_call", "id": "fc", "call_id": "call_1", "name": "run", "arguments": '{"id": 42}',
         "status": "completed"},
        {"type": "function_call", "id": "fd", "call_id": "call_2", "name": "run", "arguments": "{id: 42}",
         "status": "completed"}])
    assert blocks(answer) == [
        Block(kind="thinking", text="Look it up.\n\nThen fetch."), Block(kind="text", text="Fetching."),
        Block(kind="tool_call", tool="run", arguments=msgspec.Raw(b'{"id": 42}'), call_id="call_1"),
        Block(kind="tool_call", tool="run", raw="{id: 42}", call_id="call_2")]


def test_anthropic_blocks_thinking_redacted_text_and_tool_use():
    message = anthropic([{"type": "thinking", "thinking": "Hmm.", "signature": "s"},
                         {"type": "redacted_thinking", "data": "opaque"}, {"type": "text", "text": "Done."},
                         {"type": "tool_use", "id": "toolu_1", "name": "run",
                          "input": {"ids": [1, 2], "deep": {"é": None}}}],
                        {"input_tokens": 1, "output_tokens": 1})
    found = blocks(message)
    assert [b.kind for b in found] == ["thinking", "thinking", "text", "tool_call"]
    assert (found[0].text, found[1].text, found[3].call_id) == ("Hmm.", "", "toolu_1")
    assert found[3].arguments_value == {"ids": [1, 2], "deep": {"é": None}}


def test_gemini_blocks_thoughts_text_and_function_calls():
    response = gemini([{"text": "Thinking.", "thought": True}, {"text": "Calling."},
                       {"functionCall": {"name": "run", "args": {"n": 1}}},
                       {"functionCall": {"id": "g2", "name": "stop"}}])
    assert blocks(response) == [Block(kind="thinking", text="Thinking."), Block(kind="text", text="Calling."),
                                Block(kind="tool_call", tool="run", arguments=msgspec.Raw(b'{"n":1}')),
                                Block(kind="tool_call", tool="stop", arguments=msgspec.Raw(b"{}"), call_id="g2")]
    assert blocks(genai.GenerateContentResponse.model_validate({"candidates": []})) == []


def test_an_unknown_response_is_refused_naming_its_type():
    with pytest.raises(TypeError, match="builtins.dict is not a response these adapters know"):
        usage({"usage": {}})


# --- into the record -----------------------------------------------------------------------------------

def test_what_the_adapters_give_is_written_and_read_back_strictly(tmp_path):
    message = anthropic([{"type": "text", "text": "x <&> y"},
                         {"type": "tool_use", "id": "t", "name": "run", "input": {"a": "\u2028"}}],
                        {"input_tokens": 5, "output_tokens": 6, "cache_read_input_tokens": 7})
    completion = chat({"content": None,
                       "tool_calls": [{"id": "b", "type": "function", "function": {"name": "run", "arguments": "{"}}]})
    writer = open_dir(tmp_path)
    said = []
    for index, response in enumerate((message, completion), 1):
        writer.write(Turn(attempt="a", index=index, try_=1, status="ok", usage=usage(response), blocks=blocks(response)), report=said.append)
    release()
    (shard,) = read_shards(tmp_path)
    assert said == [] and [r.payload.usage for r in shard.records] == [Usage(input=5, output=6, cache_read=7), Usage()]
    assert shard.records[1].payload.blocks[0].raw == "{"


def test_importing_the_adapters_imports_no_sdk():
    code = ("import sys, modelrecord.providers\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'openai', 'anthropic', 'google', 'pydantic'}))")
    assert subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.strip() == "[]"
