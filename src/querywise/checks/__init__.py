"""What every proposer of a plan must pass, whoever proposed it (a rule, an LLM, a person):
the rewrite guard (nothing lost, nothing invented), the filter validator, and the vocabulary
rule of generated probes. Below understanding and triage; imports only the shared modules."""
