"""Writes tests/data/inspect/mockllm-add.eval with Inspect itself (offline: its mock model), as tests/test_inspect_run.py does:
`python tests/data/inspect/make_log.py` in a scratch directory, then copy logs/*.eval here."""
import time
t=time.time()
from inspect_ai import Task, eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model, ContentReasoning, ContentText
from inspect_ai.scorer import match
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import tool, ToolError

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
    last = input[-1]
    n = len(input)
    if last.role == "tool":
        out = ModelOutput.from_content("mockllm/model", [ContentReasoning(reasoning="The tool answered."), ContentText(text=f"The answer is {last.text}.")])
        out.usage = ModelUsage(input_tokens=30 + n, output_tokens=12, total_tokens=42 + n + 100, input_tokens_cache_read=100, reasoning_tokens=5)
        return out
    x, y = [int(v) for v in last.text.split()[-2:]]
    out = ModelOutput.for_tool_call("mockllm/model", "add", {"x": x, "y": y})
    out.usage = ModelUsage(input_tokens=20 + n, output_tokens=8, total_tokens=28 + n + 50, input_tokens_cache_write=50)
    return out

task = Task(dataset=[Sample(id=f"s{i}", input=f"Add {a} {b}", target=str(a + b)) for i, (a, b) in enumerate([(1, 2), (3, 4), (-1, 5)], 1)],
            solver=[use_tools([add()]), generate()], scorer=match(), epochs=3)
model = get_model("mockllm/model", custom_outputs=outputs)
logs = inspect_eval(task, model=model, log_dir="logs", display="none")
print(time.time()-t, logs[0].location, logs[0].status)
