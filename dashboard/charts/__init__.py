"""The plots, no Streamlit: each takes plain frames and returns a figure the pages draw (plotly; Compare's,
compare_bars, Vega-Lite through Altair)."""
