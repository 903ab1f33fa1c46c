"""The one-chart page's body, as a page of bench/one_chart_in_frame.py (bench/ is on the path: the app's folder)."""
import streamlit as st
from frame_pages.reference_chart import figure

st.title("One chart")
st.plotly_chart(figure(), key="plot_reference")
