module agenthost.example/goecho

go 1.19
