"""tsne-curator Dash front end (see the UI issue); no heavy compute lives here."""
