"""Compile Lab's dashboard (streamlit run dashboard/app.py), in rooms: screens/ (the pages), panels/ (what they draw),
charts/ (plotly figures), data/ (the results table and what is computed from it), state/ (what sessions share),
server/ (beside the pages). Imports lab/ and db/, never torch or runner/."""
