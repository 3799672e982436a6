"""The names every episode's MCP server publishes and agents rely on: the tool that ends the episode and
where the task is read."""

SUBMIT_TOOL = "submit_result"
TASK_PROMPT = "task"
TASK_RESOURCE = "occusim://task"
