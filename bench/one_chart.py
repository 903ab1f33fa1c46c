"""The reference page of bench/browser_first_plot.py: a Streamlit page that draws one plotly chart, about the size
of Results' first chart (a line per configuration over a log axis of call counts), and nothing else. What any
Streamlit page with a plot costs a browser: the app's scripts, the WebSocket, plotly.js, one figure."""
import numpy as np
import plotly.express as px
import streamlit as st

st.set_page_config(page_title="One chart", layout="wide")
st.title("One chart")
calls = np.logspace(0, 7, 60)
lines = {f"inductor/config {i}": 2.0 + i * 0.1 + calls * (1e-4 / (1 + i * 0.05)) for i in range(12)}
frame = {"calls": np.tile(calls, len(lines)), "total s": np.concatenate(list(lines.values())),
         "configuration": np.repeat(list(lines), len(calls))}
st.plotly_chart(px.line(frame, x="calls", y="total s", color="configuration", log_x=True, log_y=True,
                        title="Total time of N calls"), key="plot_reference")
