"""Rubric scoring, the LLM judge and the judging service."""
