# mcpfsm serve as a container: a static binary on a distroless base.
# Build:  docker build -t mcpfsm .
# Run:    docker run -p 8808:8808 -v $PWD/servers.json:/etc/mcpfsm/servers.json:ro \
#           -e MCPFSM_TOKEN=$(openssl rand -hex 32) mcpfsm
# Stdio servers run inside the container: build FROM this image and add
# the programs they need (node, python, ...), or use http servers.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/mcpfsm ./cmd/mcpfsm

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/mcpfsm /usr/local/bin/mcpfsm
USER nonroot:nonroot
EXPOSE 8808
ENTRYPOINT ["/usr/local/bin/mcpfsm"]
CMD ["serve", "-config", "/etc/mcpfsm/servers.json", "-listen", "0.0.0.0:8808", "-watch"]
