"""The one-chart page's body, as a page of bench/one_chart_in_frame.py."""
import numpy as np
import plotly.express as px
import streamlit as st

st.title("One chart")
calls = np.logspace(0, 7, 60)
lines = {f"inductor/config {i}": 2.0 + i * 0.1 + calls * (1e-4 / (1 + i * 0.05)) for i in range(12)}
frame = {"calls": np.tile(calls, len(lines)), "total s": np.concatenate(list(lines.values())),
         "configuration": np.repeat(list(lines), len(calls))}
st.plotly_chart(px.line(frame, x="calls", y="total s", color="configuration", log_x=True, log_y=True,
                        title="Total time of N calls"), key="plot_reference")
