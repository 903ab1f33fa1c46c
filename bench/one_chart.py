"""The reference page of bench/browser_first_plot.py: a Streamlit page that draws one plotly chart, about the size
of Results' first chart (a line per configuration over a log axis of call counts), and nothing else. What any
Streamlit page with a plot costs a browser: the app's scripts, the WebSocket, plotly.js, one figure."""
import streamlit as st
from frame_pages.reference_chart import figure  # bench/ is on the path: streamlit puts the script's folder there

st.set_page_config(page_title="One chart", layout="wide")
st.title("One chart")
st.plotly_chart(figure(), key="plot_reference")
