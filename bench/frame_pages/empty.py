"""A page of bench/one_chart_in_frame.py's navigation that is never opened."""
import streamlit as st

st.title("Not measured")
