"""The reference pages' one chart (bench/one_chart.py, bench/one_chart_in_frame.py): about the size of Results'
first chart, a line per configuration over a log axis of call counts."""
import numpy as np
import plotly.express as px


def figure():
    calls = np.logspace(0, 7, 60)
    lines = {f"inductor/config {i}": 2.0 + i * 0.1 + calls * (1e-4 / (1 + i * 0.05)) for i in range(12)}
    frame = {"calls": np.tile(calls, len(lines)), "total s": np.concatenate(list(lines.values())),
             "configuration": np.repeat(list(lines), len(calls))}
    return px.line(frame, x="calls", y="total s", color="configuration", log_x=True, log_y=True,
                   title="Total time of N calls")
