SOURCE = "warehouse"
