package docker

// ShortID is a container ID cut to its first 12 hex digits, as docker ps
// prints it; a shorter id is returned as it is.
func ShortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
