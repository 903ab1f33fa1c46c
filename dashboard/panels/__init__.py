"""What the pages draw with Streamlit, section by section: the answer table, the Results page's filters, figures and
tabs, Compare's views, the Queue's tables, the Submit form, the sidebar, a job's timeline, the version diff."""
