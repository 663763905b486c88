module semd/semclient

go 1.19
