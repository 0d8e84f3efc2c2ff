OWNER = "data-team"
