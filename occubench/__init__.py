"""OccuBench's protocol, replicated from the harness in a user's checkout: `--protocol occubench`.

Everything that protocol owns lives here: the harness reader (its prompts, read with `ast`, never run), its
world model, its verifier, its agent over MCP, and `OccubenchProtocol`, which plugs them into occusim's seam.
"""

from ._agent import OccubenchAgent
from ._harness import HarnessError, HarnessPrompts, harness_source, load_harness, occubench_config
from ._protocol import OccubenchProtocol
from ._verifier import occubench_action, trajectory_from_messages, trajectory_from_record, verify_occubench
from ._world import occubench_messages, occubench_system_prompt, simulate_occubench

__all__ = [
    "HarnessError",
    "HarnessPrompts",
    "OccubenchAgent",
    "OccubenchProtocol",
    "harness_source",
    "load_harness",
    "occubench_action",
    "occubench_config",
    "occubench_messages",
    "occubench_system_prompt",
    "simulate_occubench",
    "trajectory_from_messages",
    "trajectory_from_record",
    "verify_occubench",
]
