"""What the dashboard's server does beside the pages (dashboard/app.py): the warm-up before it answers, the Results
downloads streamed from `runner export`, and tlparse's report served page by page."""
