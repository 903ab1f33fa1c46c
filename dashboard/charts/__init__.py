"""The plots (plotly), no Streamlit: each takes plain frames and returns a figure the pages draw."""
