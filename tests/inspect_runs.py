"""A real Inspect AI run, made offline with Inspect itself: a task whose solver offers a tool, run on Inspect's mock
model (`mockllm/model`) with outputs that call the tool and carry usage, over several epochs; and the sums of what
its log holds, read with Inspect's own reader, to check an import against."""
from pathlib import Path


def run_inspect(log_dir: Path, epochs: int = 3) -> Path:
    "Run the small tool-using task on `mockllm/model` into `log_dir`; the log written."
    from inspect_ai import Task, eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ContentReasoning, ContentText, ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate, use_tools
    from inspect_ai.tool import ToolError, tool

    @tool
    def add():
        async def execute(x: int, y: int):
            """Add two numbers.

            Args:
                x: the first number
                y: the second number
            """
            if x < 0: raise ToolError("negative numbers are not supported")
            return str(x + y)
        return execute

    def outputs(input, tools, tool_choice, config):
        "A tool call for the numbers of the question; once the tool answered, the answer, with reasoning."
        last, n = input[-1], len(input)
        if last.role == "tool":
            out = ModelOutput.from_content("mockllm/model", [ContentReasoning(reasoning="The tool answered."),
                                                            ContentText(text=f"The answer is {last.text}.")])
            out.usage = ModelUsage(input_tokens=30 + n, output_tokens=12, total_tokens=142 + n,
                                   input_tokens_cache_read=100, reasoning_tokens=5)
            return out
        x, y = [int(v) for v in last.text.split()[-2:]]
        out = ModelOutput.for_tool_call("mockllm/model", "add", {"x": x, "y": y})
        out.usage = ModelUsage(input_tokens=20 + n, output_tokens=8, total_tokens=78 + n, input_tokens_cache_write=50)
        return out

    samples = [Sample(id=f"s{i}", input=f"Add {a} {b}", target=str(a + b)) for i, (a, b) in enumerate([(1, 2), (3, 4), (-1, 5)], 1)]
    task = Task(dataset=samples, solver=[use_tools([add()]), generate()], scorer=match(), epochs=epochs)
    [log] = inspect_eval(task, model=get_model("mockllm/model", custom_outputs=outputs), log_dir=str(log_dir),
                         display="none")
    return Path(log.location)


def log_figures(path) -> dict:
    "Counts and token sums of an Inspect log, read with Inspect's reader: samples, model and tool events, usage."
    from inspect_ai.event import ModelEvent, ToolEvent
    from inspect_ai.log import read_eval_log
    log = read_eval_log(str(path))
    events = [e for s in log.samples for e in s.events]
    usages = [e.output.usage for e in events if isinstance(e, ModelEvent) and e.output.usage]
    return {"attempts": len(log.samples), "turns": sum(isinstance(e, ModelEvent) for e in events),
            "calls": sum(isinstance(e, ToolEvent) for e in events),
            "input": sum(u.input_tokens for u in usages), "output": sum(u.output_tokens for u in usages),
            "cache_created": sum(u.input_tokens_cache_write or 0 for u in usages),
            "cache_read": sum(u.input_tokens_cache_read or 0 for u in usages),
            "scores": sum(len(s.scores or {}) for s in log.samples)}


def tree_figures(tree) -> dict:
    "The same counts and sums of a shard tree, read with this package's reader."
    from modelrecord.reader import read_shards
    lines = [r for shard in read_shards(tree) for r in shard.records]
    turns = [r.turn for r in lines if r.type == "turn"]
    return {"attempts": sum(r.type == "attempt" for r in lines), "turns": len(turns),
            "calls": sum(r.type == "call" for r in lines),
            **{k: sum(getattr(t.usage, k) for t in turns) for k in ("input", "output", "cache_created", "cache_read")}}
