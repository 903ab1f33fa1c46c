"""What pages and sessions share: the engine, the results store and the catalog (resources), the choices kept in a
page's link (url_params), the embedded worker, the Results page's refresh, and who is signed in (auth)."""
