"""Routing: where a message goes.

- `route.py`: the online cascade (identifier rules, the classifier behind its margin gate, unsure);
- `decision.py`: the gate that turns classifier scores into a route, a deferral or out-of-scope;
- `classifiers.py`: the centroid and trained classifiers;
- `calibration.py`: the offline choice of the gate's thresholds from labelled messages;
- `lookup.py`: the lookups a route answers from, and its fallback to search when they find nothing.
"""
