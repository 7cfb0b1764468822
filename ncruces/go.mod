module github.com/cleocode/cleolease/ncruces

go 1.26.0

replace github.com/cleocode/cleolease => ../

require (
	github.com/cleocode/cleolease v0.0.0-00010101000000-000000000000
	github.com/ncruces/go-sqlite3 v0.37.0
)

require (
	github.com/golang-migrate/migrate/v4 v4.20.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/ncruces/go-sqlite3-wasm/v6 v6.5.35401 // indirect
	github.com/ncruces/julianday v1.0.0 // indirect
	github.com/ngrok/sqlmw v0.0.0-20220520173518-97c9c04efc79 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
