"""The names every episode's MCP server publishes and agents rely on: the tool that ends the episode and
where the task is read."""

SUBMIT_TOOL = "submit_result"
TASK_PROMPT = "task"
TASK_RESOURCE = "occusim://task"
# The `_meta` key under which an agent may send a tool call's arguments as its own JSON string.
RAW_ARGUMENTS_META = "occusim/raw_arguments"
